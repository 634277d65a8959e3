// docs/configuration.md cannot fall behind the config schema: every field has a description, no
// description names a field the schema lacks, and the page's generated part is what the schema
// generates now (run `npm run docs:config` after changing the schema).
import * as fs from 'fs';
import * as path from 'path';
import { configFields, undocumented, withReference } from '../../src/config/reference';

const PAGE = path.resolve(__dirname, '..', '..', 'docs', 'configuration.md');

test('every config field is described, and only config fields are', () => {
  expect(undocumented()).toEqual({ missing: [], unknown: [] });
  expect(configFields().length).toBeGreaterThan(60);
});

test('docs/configuration.md holds the current reference (npm run docs:config)', () => {
  const page = fs.readFileSync(PAGE, 'utf8');
  expect(withReference(page)).toBe(page);
});

test('the reference shows each default and bound as the schema enforces it', () => {
  const rows = new Map(configFields().map((r) => [r.path, r]));
  expect(rows.get('limits.maxConnections')).toMatchObject({ defaultValue: '`256`', bounds: '≥ 1', type: 'integer' });
  expect(rows.get('discovery.etcd.leaseTtlSeconds')).toMatchObject({ defaultValue: '`10`', bounds: '2 .. 3600' });
  expect(rows.get('endpoints[].workers[].kvEvents.mode')).toMatchObject({ type: '`connect` \\| `bind`', defaultValue: '`"connect"`' });
  expect(rows.get('dcId')).toMatchObject({ required: true });
});
