// The only module that loads the compiled addon. Everything else imports the typed wrappers in
// src/native/.
import * as path from 'path';
import type * as Binding from '../../binding';

const ROOT = path.resolve(__dirname, '..', '..', __dirname.includes(`${path.sep}dist${path.sep}`) ? '..' : '');

function load(): typeof Binding {
  const candidate = path.join(ROOT, 'build', 'Release', 'kv_dc_relay.node');
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  return require(candidate) as typeof Binding;
}

export const addon: typeof Binding = load();
