import { addon } from '../src/native/addon';

test('xxh3("test data", 1337) is the upstream golden', () => {
  expect(addon.xxh3(Buffer.from('test data'), 1337n)).toBe(13226331709069118873n);
});
