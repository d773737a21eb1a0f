# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# npm ci offline from a local package tarball (npm's cache in the
# workspace: HOME), then node --test.
cp -r "$FIX/npm/proj" "$FIX/npm/compat-dep-1.0.0.tgz" .
cd proj
npm ci --offline --no-audit --no-fund --silent
node -e 'process.exit(require("compat-dep")(2, 3) === 5 ? 0 : 1)'
cat >add.test.js <<'JS'
const test = require('node:test');
const assert = require('node:assert');
const add = require('compat-dep');
test('add', () => { assert.strictEqual(add(2, 3), 5); });
JS
node --test
