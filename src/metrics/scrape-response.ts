// A /metrics response: the scrape's text gzip-compressed for a client whose Accept-Encoding allows it
// (Prometheus sends `Accept-Encoding: gzip`), as is otherwise. gzip runs on libuv's thread pool, and
// its ~10x smaller body is cheap to write; the plain text leaves in pieces, one per turn of the event
// loop, so that neither its encoding nor its write holds the loop in one go.
import type { IncomingMessage, ServerResponse } from 'http';
import Negotiator from 'negotiator';
import { gzip } from 'zlib';
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
  // The scrape's last rendering slice ran in this turn: the response starts in the next one.
  setImmediate(() => (gzip ? sendGzip(res, text) : sendPieces(res, text)));
}

/**
 * One compression job on libuv's pool: the text's utf8 encoding (~0.3-0.6 ms at 512 sources) is the
 * loop's only share. A zlib stream fed a piece per turn cost the loop a wake-up and stream callbacks
 * per piece: ~0.5 ms more per scrape.
 */
function sendGzip(res: ServerResponse, text: string): void {
  if (res.destroyed) return;
  gzip(text, { level: SCRAPE_GZIP_LEVEL }, (err, body) => {
    if (err) res.destroy(err);
    else res.end(body);
  });
}

/** The text a piece per turn: writing ~475 KB at once held the loop ~1.3 ms. */
function sendPieces(res: ServerResponse, text: string): void {
  const rest = pieces(text, SCRAPE_WRITE_PIECE_CHARS);
  let next = 0;
  const write = (): void => {
    if (res.destroyed) return;
    if (next === rest.length) {
      res.end();
      return;
    }
    res.write(rest[next++]);
    setImmediate(write);
  };
  write();
}
