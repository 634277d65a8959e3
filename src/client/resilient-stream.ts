// One server stream that reopens itself: open → messages → failure → (backoff | wait | stop) → open.
// The owner decides what a failure means; this class only sequences calls and timers so that a late
// event from an abandoned call can never reach the owner.
import { status as GrpcStatus, type ClientReadableStream, type StatusObject } from '@grpc/grpc-js';
import { relayErrorReason, relayErrorReasonName } from '../wire/errors';
import { Backoff } from './backoff';
import { streamAction, type StreamAction } from './error-action';

export interface StreamFailure {
  /** 'status': the call ended with an error status; 'eof': it ended cleanly (unexpected for every
   *  Relay stream); 'invalid': a message failed validation (the owner threw); 'silent': no message
   *  arrived within the silence limit (the call is cancelled). */
  kind: 'status' | 'eof' | 'invalid' | 'silent';
  code?: GrpcStatus;
  /** Decoded `kv-relay-error-reason` trailer. */
  relayReason?: number;
  /** The trailer name, else the status code name, else the validation reason. */
  reason: string;
  message: string;
  /** What the contract guidance says to do (before the owner's own decision). */
  action: StreamAction;
  cause?: unknown;
}

/** setTimeout fires at once for longer delays; a silence limit derived from a peer's window_ms is clamped to it. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export type FailureDecision = 'retry' | 'wait' | 'stop';

export interface ResilientStreamOptions<T> {
  open(): ClientReadableStream<T>;
  /** A new call is about to start: drop whatever the previous call established. */
  onOpen(): void;
  /** Handles one message; throwing marks the stream invalid (the call is cancelled). */
  onMessage(message: T): void;
  onFailure(failure: StreamFailure): FailureDecision;
  backoff: Backoff;
  /** Labels a validation error thrown by onMessage. */
  describeInvalid(err: unknown): { reason: string; message: string };
  /** Longest accepted gap between messages of an open call (asked again after every message), so a
   *  stream that stays open but stops sending is not trusted forever. Undefined: no limit. */
  silenceLimitMs?: () => number;
}

export type StreamState = 'idle' | 'open' | 'backoff' | 'waiting' | 'stopped';

export class ResilientStream<T> {
  private call: ClientReadableStream<T> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private silenceTimer: NodeJS.Timeout | undefined;
  private current: StreamState = 'idle';
  private lastDelayMs = 0;
  /** When the current call delivered its first valid message. */
  private healthySince: number | undefined;

  constructor(private readonly options: ResilientStreamOptions<T>) {}

  get state(): StreamState {
    return this.current;
  }

  /** The last backoff delay applied (diagnostics). */
  get lastBackoffMs(): number {
    return this.lastDelayMs;
  }

  start(): void {
    if (this.current === 'stopped' || this.current === 'open') return;
    this.clearTimer();
    this.connect();
  }

  /** Leaves 'waiting' (e.g. after a catalog refresh) and reconnects immediately. */
  resume(): void {
    if (this.current === 'waiting') this.start();
  }

  stop(): void {
    this.current = 'stopped';
    this.clearTimer();
    this.abandonCall();
  }

  private connect(): void {
    this.current = 'open';
    this.options.onOpen();
    const call = this.options.open();
    this.call = call;
    this.healthySince = undefined;
    this.watchSilence(call);
    let ended = false;
    let okStatus = false;
    call.on('data', (message: T) => {
      if (this.call !== call) return;
      try {
        this.options.onMessage(message);
      } catch (err) {
        const { reason, message: text } = this.options.describeInvalid(err);
        this.fail(call, { kind: 'invalid', reason, message: text, action: 'retry', cause: err });
        return;
      }
      this.healthySince ??= Date.now();
      this.watchSilence(call);
    });
    // grpc-js reports a failed call through both 'error' and 'status'; 'status' carries the trailers.
    call.on('error', () => undefined);
    call.on('status', (status: StatusObject) => {
      if (this.call !== call) return;
      if (status.code === GrpcStatus.OK) {
        okStatus = true;
        if (ended) this.failEof(call);
        return;
      }
      const relayReason = relayErrorReason(status);
      this.fail(call, {
        kind: 'status',
        code: status.code,
        relayReason,
        reason: relayReason !== undefined ? relayErrorReasonName(relayReason as never) : GrpcStatus[status.code],
        message: status.details,
        action: streamAction(relayReason, status.code),
      });
    });
    // A clean end is reported once every message before it has been handled.
    call.on('end', () => {
      ended = true;
      if (this.call === call && okStatus) this.failEof(call);
    });
  }

  /** (Re)arms the silence limit of `call`; unref'd so an idle client never keeps the process alive. */
  private watchSilence(call: ClientReadableStream<T>): void {
    if (this.call !== call) return;
    this.clearSilenceTimer();
    const asked = this.options.silenceLimitMs?.();
    if (asked === undefined) return;
    const limitMs = Math.min(asked, MAX_TIMER_MS);
    this.silenceTimer = setTimeout(() => {
      this.silenceTimer = undefined;
      this.fail(call, { kind: 'silent', reason: 'streamSilent', message: `no message for ${limitMs} ms`, action: 'retry' });
    }, limitMs);
    this.silenceTimer.unref();
  }

  private failEof(call: ClientReadableStream<T>): void {
    this.fail(call, { kind: 'eof', reason: 'unexpectedEof', message: 'stream ended cleanly', action: 'retry' });
  }

  private fail(call: ClientReadableStream<T>, failure: StreamFailure): void {
    if (this.call !== call) return;
    this.abandonCall();
    // Only a stream that stayed healthy for a while resets the delay (and retries under the recovery
    // cap for a while: its peer probably restarts), so a stream that keeps failing right after its
    // first message (e.g. a bad delta after each snapshot) still backs off.
    if (this.healthySince !== undefined && Date.now() - this.healthySince >= this.options.backoff.maxMs) this.options.backoff.recover();
    const decision = this.options.onFailure(failure);
    if (this.current === 'stopped') return;
    if (decision === 'stop') {
      this.current = 'stopped';
    } else if (decision === 'wait') {
      this.current = 'waiting';
    } else {
      this.current = 'backoff';
      this.lastDelayMs = this.options.backoff.next();
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.connect();
      }, this.lastDelayMs);
    }
  }

  private abandonCall(): void {
    this.clearSilenceTimer();
    const call = this.call;
    this.call = undefined;
    if (call) call.cancel();
  }

  private clearSilenceTimer(): void {
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
