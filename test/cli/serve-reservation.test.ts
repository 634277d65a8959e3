// limits.reservePoolBlocks at start: the relay says what the pools' reserved tables take, and warns
// when that is most of the host's memory. The rule is pure (reservationMemory); a real relay process
// shows the line it logs.
import * as os from 'os';
import { RESERVATION_WARN_MEMORY_SHARE, RESERVED_BYTES_PER_BLOCK } from '../../src/config/defaults';
import { reservationMemory } from '../../src/producer/views';
import { relayConfig } from '../support/relay-config';
import { RelayProcess } from '../support/relay-process';
import { waitFor } from '../support/waitFor';

const GIB = 2 ** 30;

describe('reservationMemory', () => {
  it('counts every configured pool, and one under discovery (no endpoints configured)', () => {
    expect(reservationMemory(1_000_000, 4, 64 * GIB)).toMatchObject({ perPoolBytes: 1_000_000 * RESERVED_BYTES_PER_BLOCK, pools: 4, totalBytes: 4_000_000 * RESERVED_BYTES_PER_BLOCK });
    expect(reservationMemory(1_000_000, 0, 64 * GIB)).toMatchObject({ pools: 1, totalBytes: 1_000_000 * RESERVED_BYTES_PER_BLOCK });
  });

  it('exceeds once the pools together pass the share of the host memory, not before', () => {
    const host = 16 * GIB;
    const atShare = Math.floor((RESERVATION_WARN_MEMORY_SHARE * host) / RESERVED_BYTES_PER_BLOCK / 8);
    expect(reservationMemory(atShare, 8, host).exceeds).toBe(false);
    expect(reservationMemory(atShare + 1, 8, host).exceeds).toBe(true);
    // 48 pools of 4 Mi blocks (~9.4 GiB) on a 16 GiB host.
    expect(reservationMemory(4 * 2 ** 20, 48, host).exceeds).toBe(true);
    expect(reservationMemory(4 * 2 ** 20, 1, host).exceeds).toBe(false);
  });
});

describe('serve', () => {
  let relay: RelayProcess | undefined;
  afterEach(async () => {
    await relay?.close();
    relay = undefined;
  });

  it('logs what a reservation takes per pool at start, and no warning when it fits', async () => {
    relay = await new RelayProcess(relayConfig([], { limits: { reservePoolBlocks: 65_536 } })).start();
    await waitFor(() => relay!.events().some((e) => e.msg === 'pool tables reserved at creation'), 'the reservation line');
    const line = relay.events().find((e) => e.msg === 'pool tables reserved at creation')!;
    expect(line).toMatchObject({ level: 30, reservePoolBlocks: 65_536, bytesPerPool: 65_536 * RESERVED_BYTES_PER_BLOCK, pools: 1, hostBytes: os.totalmem() });
    expect(relay.events().some((e) => e.level === 40 && String(e.msg).startsWith('pool table reservations'))).toBe(false);
  });

  it('says nothing about reservations without one', async () => {
    relay = await new RelayProcess(relayConfig([])).start();
    expect(await relay.stop('SIGTERM')).toBe(0);
    expect(relay.events().map((e) => e.msg)).toContain('stopped');
    expect(relay.events().some((e) => String(e.msg).includes('reserv'))).toBe(false);
  });
});
