// Lets `node -r scripts/ts-hook.js src/cli/main.ts …` run the TypeScript sources as a real
// process in tests (transpile only; tsc checks types). Output is cached by path and mtime so
// repeated spawns start fast. Ingest threads started from the sources load them through it too
// (src/ingest/threads/spawn.ts); a built package runs dist/ and never loads it.
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');
const ts = require('typescript');

const cacheDir = path.join(os.tmpdir(), 'kv-dc-relay-ts-hook');
fs.mkdirSync(cacheDir, { recursive: true });

require.extensions['.ts'] = (module, filename) => {
  const stat = fs.statSync(filename);
  const key = crypto.createHash('sha1').update(`${ts.version}\0${filename}\0${stat.mtimeMs}\0${stat.size}`).digest('hex');
  const cached = path.join(cacheDir, `${key}.js`);
  let code;
  try {
    code = fs.readFileSync(cached, 'utf8');
  } catch {
    code = ts.transpileModule(fs.readFileSync(filename, 'utf8'), {
      fileName: filename,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true, sourceMap: false },
    }).outputText;
    const tmp = `${cached}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, code);
    fs.renameSync(tmp, cached);
  }
  module._compile(code, filename);
};
