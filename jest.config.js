const { exports: entries } = require('./package.json');

// Code that imports the package by name (examples/) runs from the sources under test, like
// tsconfig.json's `paths`: each entry point in package.json `exports` maps to its src/ module.
const moduleNameMapper = {};
for (const [subpath, target] of Object.entries(entries)) {
  if (typeof target !== 'object') continue;
  const source = target.default.replace(/^\.\/dist\//, '<rootDir>/').replace(/\.js$/, '.ts');
  moduleNameMapper[`^${subpath.replace(/^\./, 'kv-dc-relay')}$`] = source;
}

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: '<rootDir>/test/support/leak-check-environment.js',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  moduleNameMapper,
  testTimeout: 60000,
  maxWorkers: 2,
};
