// Jest's node environment plus a check at the end of every test file that no native SUB socket is
// left open. The addon is loaded once per jest worker (Node's require, outside the test's module
// registry), so every test file of a worker shares its ZMQ context: a ZmqSubscriber one file leaves
// open keeps the worker's event loop alive (jest then force-exits it "failed to exit gracefully")
// and holds descriptors the next files count on. Plain JavaScript: jest loads environments untransformed.
'use strict';
const { TestEnvironment } = require('jest-environment-node');

/** The exports of every kv-dc-relay addon this worker loaded (the build under test, ASan or not). */
function loadedAddons() {
  return Object.keys(require.cache)
    .filter((file) => file.endsWith('kv_dc_relay.node'))
    .map((file) => require.cache[file].exports);
}

class LeakCheckEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
  }

  async teardown() {
    const open = loadedAddons().reduce((sum, addon) => sum + addon.zmqOpenSockets(), 0);
    await super.teardown();
    if (open > 0) {
      throw new Error(`${this.testPath}: ${open} native ZMQ SUB socket(s) left open after the file's tests (close every KvEventSubscriber / ZmqSubscriber)`);
    }
  }
}

module.exports = LeakCheckEnvironment;
