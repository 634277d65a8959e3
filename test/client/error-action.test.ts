import { status } from '@grpc/grpc-js';
import { planeStreamAction, streamAction } from '../../src/client/error-action';
import { RelayErrorReason as R } from '../../src/wire/enums';

describe('streamAction (consumer.md §1.4 contract guidance)', () => {
  it.each([
    [R.RESOURCE_LIMIT, status.RESOURCE_EXHAUSTED, 'retry'],
    [R.SUBSCRIBER_LAGGED, status.RESOURCE_EXHAUSTED, 'retry'],
    [R.SNAPSHOT_PROGRESS_TIMEOUT, status.RESOURCE_EXHAUSTED, 'retry'],
    [R.PUBLICATION_UNAVAILABLE, status.UNAVAILABLE, 'retry'],
    [R.PRODUCER_CHANGED, status.FAILED_PRECONDITION, 'refreshCatalog'],
    [R.POOL_NOT_FOUND, status.NOT_FOUND, 'refreshCatalog'],
    [R.CONTRACT_MISMATCH, status.FAILED_PRECONDITION, 'stop'],
    [R.INVALID_REQUEST, status.INVALID_ARGUMENT, 'stop'],
    [R.UNSUPPORTED_FEATURE, status.FAILED_PRECONDITION, 'stop'],
  ])('reason %i (code %i) -> %s', (reason, code, action) => {
    expect(streamAction(reason, code)).toBe(action);
  });

  it('uses the reason, not the code, when both are present', () => {
    // A RESOURCE_EXHAUSTED code never decides against an explicit reason.
    expect(streamAction(R.PRODUCER_CHANGED, status.RESOURCE_EXHAUSTED)).toBe('refreshCatalog');
  });

  it.each([
    [status.RESOURCE_EXHAUSTED, 'retry'],
    [status.UNAVAILABLE, 'retry'],
    [status.INTERNAL, 'retry'],
    [status.NOT_FOUND, 'refreshCatalog'],
    [status.FAILED_PRECONDITION, 'refreshCatalog'],
    [status.INVALID_ARGUMENT, 'stop'],
    [status.UNIMPLEMENTED, 'stop'],
  ])('without a reason falls back to code %i -> %s', (code, action) => {
    expect(streamAction(undefined, code)).toBe(action);
  });

  it('turns a catalog refresh into a retry for the planes', () => {
    expect(planeStreamAction(R.POOL_NOT_FOUND, status.NOT_FOUND)).toBe('retry');
    expect(planeStreamAction(R.CONTRACT_MISMATCH, status.FAILED_PRECONDITION)).toBe('stop');
  });
});
