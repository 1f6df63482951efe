import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stringList } from '../../src/store/json-columns.ts';

test('a JSON string-list column reads back its strings; anything else in it reads as none', () => {
  assert.deepEqual(stringList('["ssh-ed25519 AAAA a@b","192.0.2.7"]'), ['ssh-ed25519 AAAA a@b', '192.0.2.7']);
  assert.deepEqual(stringList('["kept", 7, null, {"x":1}]'), ['kept'], 'only its strings');
  assert.deepEqual(stringList('{"not":"a list"}'), []);
  assert.deepEqual(stringList('"text"'), []);
  assert.deepEqual(stringList('[]'), []);
});
