// A /metrics response: the scrape's text gzip-compressed for a client whose Accept-Encoding allows it
// (Prometheus sends `Accept-Encoding: gzip`), as is otherwise. Either way it leaves in pieces, one per
// turn of the event loop, so that neither its encoding nor its write holds the loop in one go; gzip
// runs on libuv's thread pool (zlib streams), and its ~10x smaller body is cheap to write.
import type { IncomingMessage, ServerResponse } from 'http';
import Negotiator from 'negotiator';
import { pipeline, type Writable } from 'stream';
import { createGzip } from 'zlib';
import { SCRAPE_GZIP_LEVEL, SCRAPE_WRITE_PIECE_CHARS } from '../config/defaults';

/** Whether the request's Accept-Encoding prefers gzip to identity (q-values, `*`, `gzip;q=0` as RFC 9110 has them). */
export function acceptsGzip(req: IncomingMessage): boolean {
  return new Negotiator(req).encoding(['gzip', 'identity']) === 'gzip';
}

/** `text` cut at line ends into pieces of about `size` characters (a cut never splits a character). */
export function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let at = 0; at < text.length; ) {
    const nl = text.indexOf('\n', at + size - 1);
    const end = nl < 0 ? text.length : nl + 1;
    out.push(text.slice(at, end));
    at = end;
  }
  return out;
}

/** Sends `text` with `contentType` as the answer to `req` (HEAD: the headers only). */
export function sendScrape(req: IncomingMessage, res: ServerResponse, text: string, contentType: string): void {
  const gzip = acceptsGzip(req);
  res.writeHead(200, { 'content-type': contentType, vary: 'Accept-Encoding', ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  let body: Writable = res;
  if (gzip) {
    const zip = createGzip({ level: SCRAPE_GZIP_LEVEL });
    // A client that goes away mid-response ends the zlib stream too (and its native handle).
    pipeline(zip, res, () => undefined);
    body = zip;
  }
  const rest = pieces(text, SCRAPE_WRITE_PIECE_CHARS);
  let next = 0;
  const write = (): void => {
    if (body.destroyed) return;
    if (next === rest.length) {
      body.end();
      return;
    }
    body.write(rest[next++]);
    setImmediate(write);
  };
  // The scrape's last rendering slice ran in this turn: the response starts in the next one.
  setImmediate(write);
}
