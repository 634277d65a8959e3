// The evaluated router: a GlobalRouter whose view of every DC is its RelayClient's replicas and load
// windows, received over gRPC through the WAN; the prompt is expanded and hashed as a real router
// would hash its request's tokens.
import type { GlobalRouter } from '../router';
import type { RouteResult, RouterPort } from './driver';
import { promptTokens, type SimRequest } from './request';

export class RelayRouter implements RouterPort {
  constructor(
    readonly router: GlobalRouter,
    private readonly model: string,
    /** The request's TTFT target handed to the router (none: the policy is not told). */
    private readonly ttftSloMs?: (request: SimRequest) => number,
  ) {}

  route(request: SimRequest): RouteResult {
    const decision = this.router.route({ model: this.model, tokens: promptTokens(request.prompt), ttftSloMs: this.ttftSloMs?.(request) });
    return { dc: decision.chosen?.dc ?? null, matchedTokens: decision.chosen?.matchedTokens ?? null, booking: decision };
  }
}
