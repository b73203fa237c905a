// Drives a running pushd with the original service's JavaScript SDK (leancloud-storage, pinned
// in package.json), unchanged: the strictest judge of compatibility. e2e/jssdk_test.go starts
// pushd with an app created by `pushd app create --id` and runs this file with node --test;
// the environment names the server and the app's original identity.
'use strict';

const { test, before } = require('node:test');
const assert = require('node:assert/strict');
const AV = require('leancloud-storage');

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this file through e2e/jssdk_test.go`);
  return v;
};

before(() => {
  AV.init({
    appId: env('PUSHD_JSSDK_APP_ID'),
    appKey: env('PUSHD_JSSDK_APP_KEY'),
    masterKey: env('PUSHD_JSSDK_MASTER_KEY'),
    serverURL: env('PUSHD_JSSDK_SERVER_URL'),
  });
});

const iid = '6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f';

test('an installation saved, updated, fetched, queried and pushed to', async () => {
  // Save: POST /1.1/classes/_Installation with X-LC-Id and X-LC-Sign (app key).
  const inst = new AV.Installation();
  inst.set({ deviceType: 'android', installationId: iid, timeZone: 'Asia/Shanghai' });
  inst.addUnique('channels', 'news');
  await inst.save();
  assert.match(inst.id, /^[0-9a-f]{24}$/);
  assert.ok(inst.createdAt instanceof Date, 'createdAt parsed from the answer');

  // Update with fetchWhenSave: PUT ...?new=true answers the whole stored object.
  inst.addUnique('channels', 'sports');
  inst.increment('badge', 2);
  inst.set('deviceProfile', 'mi_prod');
  await inst.save(null, { fetchWhenSave: true });
  assert.deepEqual([...inst.get('channels')].sort(), ['news', 'sports']);
  assert.equal(inst.get('badge'), 2);
  assert.equal(inst.get('installationId'), iid);
  assert.ok(inst.updatedAt instanceof Date);

  // Fetch with the app key: GET /1.1/classes/_Installation/<id>.
  const again = AV.Object.createWithoutData('_Installation', inst.id);
  await again.fetch();
  assert.equal(again.get('timeZone'), 'Asia/Shanghai');
  assert.equal(again.get('deviceProfile'), 'mi_prod');

  // Query with the master key (installations are not readable with the app key).
  const q = new AV.Query(AV.Installation);
  q.equalTo('channels', 'sports');
  q.descending('updatedAt');
  const found = await q.find({ useMasterKey: true });
  assert.equal(found.length, 1);
  assert.equal(found[0].id, inst.id);
  assert.equal(await new AV.Query(AV.Installation).equalTo('deviceType', 'android').count({ useMasterKey: true }), 1);
  await assert.rejects(q.find(), (err) => err.code === 119, 'an app-key query is refused like the original: 119');

  // Two more devices at once: AV.Object.saveAll goes through POST /1.1/batch.
  const a = new AV.Installation({ deviceType: 'android', installationId: 'c0ffee00-0000-4000-8000-000000000001', channels: ['news'] });
  const b = new AV.Installation({ deviceType: 'android', installationId: 'c0ffee00-0000-4000-8000-000000000002', channels: ['news'] });
  await AV.Object.saveAll([a, b]);
  assert.match(a.id, /^[0-9a-f]{24}$/);
  assert.match(b.id, /^[0-9a-f]{24}$/);
  assert.equal(await new AV.Query(AV.Installation).equalTo('channels', 'news').count({ useMasterKey: true }), 3);

  // A push with the master key, to a channel and to a query.
  const sent = await AV.Push.send({ channels: ['sports'], data: { alert: 'Kick-off in 10 minutes', title: 'Match' } }, { useMasterKey: true });
  assert.match(sent.objectId, /^[0-9A-Za-z]+$/);
  const where = new AV.Query(AV.Installation).equalTo('deviceProfile', 'mi_prod');
  const sentQ = await AV.Push.send({ where, data: { alert: 'Only for mi_prod' }, expiration_interval: 3600 }, { useMasterKey: true });
  assert.ok(sentQ.objectId);
  // Without the master key the app's client-push switch (off, as the original's default) decides.
  await assert.rejects(AV.Push.send({ channels: ['news'], data: { alert: 'x' } }), (err) => err.code === 119);
  // A bad push gets the {code, error} the SDK turns into an AVError.
  await assert.rejects(AV.Push.send({ channels: ['bad channel!'], data: { alert: 'x' } }, { useMasterKey: true }), (err) => err.code === 112);

  // The record of the push, read through the SDK's low-level request with the master key.
  const rec = await AV.request({ method: 'GET', path: `/tables/Notifications/${sent.objectId}`, authOptions: { useMasterKey: true } });
  assert.equal(rec.objectId, sent.objectId);
  assert.equal(rec.prod, 'prod');

  // Destroy needs the master key, as on the original.
  await assert.rejects(inst.destroy(), (err) => err.code === 119);
  await inst.destroy({ useMasterKey: true });
  await AV.Object.destroyAll([a, b], { useMasterKey: true });
  assert.equal(await new AV.Query(AV.Installation).count({ useMasterKey: true }), 0);
});

test('the production header sets the default environment of a push', async () => {
  AV.setProduction(false); // X-LC-Prod: 0
  try {
    const sent = await AV.Push.send({ channels: ['news'], data: { alert: 'staging' } }, { useMasterKey: true });
    const rec = await AV.request({ method: 'GET', path: `/tables/Notifications/${sent.objectId}`, authOptions: { useMasterKey: true } });
    assert.equal(rec.prod, 'dev');
  } finally {
    AV.setProduction(null);
  }
});
