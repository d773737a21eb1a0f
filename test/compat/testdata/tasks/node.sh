# npm ci from a local cache (offline: the registry is never asked) and
# node --test.
cp -r "$FIX/npm/cache" npm-cache
cp -r "$FIX/npm/proj" "$FIX/npm/compat-dep-1.0.0.tgz" .
cd proj
npm ci --offline --no-audit --no-fund --cache "$WS/npm-cache" --silent
cat >add.test.js <<'JS'
const test = require('node:test');
const assert = require('node:assert');
const add = require('compat-dep');
test('add', () => { assert.strictEqual(add(2, 3), 5); });
JS
node --test
