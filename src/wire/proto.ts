// Loads proto/relay.proto once with protobufjs and exposes the reflection objects: the Root for
// the codec, and a protoc-shaped FileDescriptorProto for gRPC server reflection.
import * as fs from 'fs';
import * as path from 'path';
import * as protobuf from 'protobufjs';
import * as descriptor from 'protobufjs/ext/descriptor';
import { RELAY_PROTO_PACKAGE, RELAY_SERVICE_NAME } from './constants';

/** File name under which reflection serves the schema (the upstream file is relay.proto). */
export const RELAY_PROTO_FILE_NAME = 'relay.proto';

// Works from src/wire (ts-jest) and from dist/src/wire (compiled); the proto stays at the repo root.
function findProtoFile(): string {
  const candidates = [
    path.resolve(__dirname, '..', '..', 'proto', RELAY_PROTO_FILE_NAME),
    path.resolve(__dirname, '..', '..', '..', 'proto', RELAY_PROTO_FILE_NAME),
  ];
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) throw new Error(`relay.proto not found (looked in ${candidates.join(', ')})`);
  return found;
}

export const RELAY_PROTO_PATH = findProtoFile();

/** The resolved protobufjs root of dynamo.kvrelay.v1. */
export const relayRoot: protobuf.Root = protobuf.loadSync(RELAY_PROTO_PATH);
relayRoot.resolveAll();

export function relayType(name: string): protobuf.Type {
  return relayRoot.lookupType(`${RELAY_PROTO_PACKAGE}.${name}`);
}

export const relayService: protobuf.Service = relayRoot.lookupService(RELAY_SERVICE_NAME);

interface FieldDescriptorLike {
  name: string;
  options?: Record<string, unknown>;
  typeName?: string;
  jsonName?: string;
  oneofIndex?: number;
  proto3Optional?: boolean;
}
interface MessageDescriptorLike {
  field?: FieldDescriptorLike[];
  oneofDecl?: { name: string }[];
}

function lowerCamel(snake: string): string {
  return snake.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

// protobufjs writes package-relative type names and camelCase synthetic oneof names; protoc writes
// fully qualified names, json_name on every field and `_<field_name>` synthetic oneofs. Reflection
// clients (grpcurl, Go/Rust descriptor pools) expect the protoc shape, so normalize to it.
function normalizeMessage(msg: MessageDescriptorLike): void {
  for (const field of msg.field ?? []) {
    if (field.typeName && !field.typeName.startsWith('.')) {
      field.typeName = `.${RELAY_PROTO_PACKAGE}.${field.typeName}`;
    }
    field.jsonName = lowerCamel(field.name);
    if (field.options && Object.keys(field.options).length === 0) delete field.options;
    if (field.proto3Optional && field.oneofIndex !== undefined && msg.oneofDecl) {
      msg.oneofDecl[field.oneofIndex].name = `_${field.name}`;
    }
  }
}

function buildFileDescriptorProto(): Buffer {
  const set = (relayRoot as unknown as { toDescriptor(syntax: string): { file: unknown[] } }).toDescriptor('proto3');
  if (set.file.length !== 1) throw new Error(`expected one proto file, got ${set.file.length}`);
  const file = set.file[0] as { name: string; messageType: MessageDescriptorLike[] };
  file.name = RELAY_PROTO_FILE_NAME;
  file.messageType.forEach(normalizeMessage);
  const FileDescriptorProto = (descriptor as unknown as { FileDescriptorProto: protobuf.Type }).FileDescriptorProto;
  return Buffer.from(FileDescriptorProto.encode(file as unknown as protobuf.Message).finish());
}

/** Encoded google.protobuf.FileDescriptorProto of relay.proto (what reflection serves). */
export const relayFileDescriptorProto: Buffer = buildFileDescriptorProto();

/** Encoded google.protobuf.FileDescriptorSet holding relayFileDescriptorProto. */
export const relayFileDescriptorSet: Buffer = (() => {
  const FileDescriptorSet = (descriptor as unknown as { FileDescriptorSet: protobuf.Type }).FileDescriptorSet;
  const FileDescriptorProto = (descriptor as unknown as { FileDescriptorProto: protobuf.Type }).FileDescriptorProto;
  const file = FileDescriptorProto.decode(relayFileDescriptorProto);
  return Buffer.from(FileDescriptorSet.encode({ file: [file] } as unknown as protobuf.Message).finish());
})();

/**
 * The shape @grpc/reflection's ReflectionService consumes (a proto-loader PackageDefinition reduced to
 * what it reads: `fileDescriptorProtos`). Usage: `new ReflectionService(relayReflectionPackageDefinition)`.
 */
export const relayReflectionPackageDefinition: Record<string, { fileDescriptorProtos: Buffer[] }> = {
  [RELAY_SERVICE_NAME]: { fileDescriptorProtos: [relayFileDescriptorProto] },
};
