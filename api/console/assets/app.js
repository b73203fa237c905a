// pushd console: a hash-routed page over the REST API. Views: sign in, push records (live
// while a push runs), one record, scheduled pushes, a new push (with its dry-run audience
// before sending) and installation search.
import { call, query, session, saveSession, clearSession, APIError } from './api.js';
import { h, fmtTime, fmtNum, toast, replaceKeepingFocus } from './dom.js';

// How often a view polls: fast while a push is running, slowly when all are settled.
const LIVE_MS = 1000;
const IDLE_MS = 5000;
const ACTIVE = new Set(['scheduled', 'in-queue', 'in-process']);
const PLATFORMS = ['ios', 'android', 'fcm', 'hms', 'mi', 'mz', 'vivo', 'oppo'];

const main = document.getElementById('main');
let generation = 0; // bumped on every navigation: a view's timers stop when it is no longer shown

// view is what a view function gets: whether it is still shown, and a poller bound to it.
function newView() {
  const gen = ++generation;
  const alive = () => gen === generation;
  return {
    alive,
    // poll runs fn now and again after the delay it returns, while the view is shown.
    poll(fn) {
      const tick = async () => {
        if (!alive()) return;
        let next = IDLE_MS;
        try {
          next = await fn();
        } catch (e) {
          if (e instanceof APIError && e.status === 401) return signOut('Your key was refused: sign in again.');
        }
        if (alive() && next) setTimeout(tick, next);
      };
      tick();
    },
  };
}

function show(title, ...content) {
  document.title = `${title} · pushd console`;
  main.replaceChildren(...content);
}

function errorBox(e) {
  return h('div', { class: 'error', role: 'alert' }, e instanceof APIError && e.code ? `Error ${e.code}: ${e.message}` : e.message);
}

function statusBadge(s) {
  return h('span', { class: `status ${s}`, 'data-status': s }, s);
}

// handled is how many of a record's targets have a final outcome.
function handled(r) {
  return (r.successes || 0) + (r.failures || 0) + (r.expired || 0) + (r.invalidTokens || 0);
}

function progressCell(r) {
  const total = r.devices || 0;
  const done = r.status === 'done' ? Math.max(handled(r), total) : handled(r);
  const pct = total > 0 ? Math.min(100, Math.round((100 * done) / total)) : r.status === 'done' ? 100 : 0;
  const label = `${fmtNum(Math.min(done, total))} of ${fmtNum(total)} handled`;
  return h('div', { class: 'prog' },
    h('progress', { max: 100, value: pct, 'aria-label': `Progress: ${label}` }),
    h('span', { class: 'pct' }, `${pct}%`));
}

function channelChips(r) {
  const by = (r.counts && r.counts.byChannel) || {};
  const names = Object.keys(by).sort();
  if (!names.length) return h('span', { class: 'muted' }, '—');
  return h('div', { class: 'chips' }, names.map((ch) =>
    h('span', { class: 'chip', 'data-channel': ch, title: `${ch}: ${by[ch].sent} sent of ${by[ch].targets} targets` },
      `${ch} ${fmtNum(by[ch].sent)}/${fmtNum(by[ch].targets)}`)));
}

function targetOf(r) {
  if (r.deviceType) return `${fmtNum(r.deviceCount)} ${r.deviceType} device ids`;
  const parts = [];
  if (r.channels && r.channels.length) parts.push(`channels: ${r.channels.join(', ')}`);
  if (r.where && Object.keys(r.where).length) parts.push(`where ${JSON.stringify(r.where)}`);
  return parts.length ? parts.join(' · ') : 'all devices';
}

function alertOf(msg) {
  if (!msg || typeof msg !== 'object') return '';
  const a = msg.alert ?? (msg.aps && msg.aps.alert);
  if (typeof a === 'string') return a;
  if (a && typeof a === 'object') return a.body || a.title || '';
  return '';
}

// ---------- sign in ----------

function signInView(message) {
  document.getElementById('nav').hidden = true;
  document.getElementById('who').hidden = true;
  const err = h('div', { 'aria-live': 'assertive' });
  if (message) err.append(h('div', { class: 'error', role: 'alert' }, message));
  const appId = h('input', { type: 'text', id: 'app-id', name: 'app-id', autocomplete: 'username', required: true, spellcheck: 'false' });
  const key = h('input', { type: 'password', id: 'master-key', name: 'master-key', autocomplete: 'current-password', required: true });
  const submit = h('button', { type: 'submit', id: 'signin-submit' }, 'Sign in');
  const form = h('form', { id: 'signin', class: 'card signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in'),
    h('p', { class: 'hint' }, 'Use the app id and the master key. They stay in this browser tab only and are sent as request headers, never in a URL.'),
    h('label', { for: 'app-id' }, 'App id'), appId,
    h('label', { for: 'master-key' }, 'Master key'), key,
    err,
    h('p', {}, submit));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    err.replaceChildren();
    const s = { appId: appId.value.trim(), masterKey: key.value.trim() };
    try {
      await call('GET', '/1.1/notifications?limit=1', undefined, s);
      saveSession(s.appId, s.masterKey);
      key.value = '';
      if (!location.hash || location.hash === '#/signin') location.hash = '#/records';
      else route();
    } catch (e) {
      err.replaceChildren(errorBox(e.status === 401 || e.status === 403 ? new Error('The app id or master key is wrong.') : e));
      submit.disabled = false;
      key.focus();
    }
  });
  show('Sign in', form);
  appId.focus();
}

function signOut(message) {
  clearSession();
  generation++;
  signInView(message);
}

// ---------- push records ----------

function recordsView(v) {
  const updated = h('span', { class: 'muted', id: 'records-updated', 'aria-live': 'off' });
  const body = h('div', { id: 'records' }, h('p', { class: 'empty' }, 'Loading…'));
  show('Push records',
    h('div', { class: 'bar' },
      h('h1', { class: 'grow' }, 'Push records'),
      updated,
      h('a', { class: 'button', href: '#/compose' }, 'New push')),
    body);
  v.poll(async () => {
    let res;
    try {
      res = await call('GET', `/1.1/notifications${query({ limit: 50 })}`);
    } catch (e) {
      if (e.status === 401) throw e;
      body.replaceChildren(errorBox(e));
      return IDLE_MS;
    }
    if (!v.alive()) return 0;
    const rows = res.results || [];
    updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    if (!rows.length) {
      body.replaceChildren(h('p', { class: 'empty' }, 'No push records yet.'));
      return IDLE_MS;
    }
    replaceKeepingFocus(body, h('div', { class: 'scroll' }, h('table', { id: 'records-table' },
      h('caption', { class: 'sr-only' }, 'Push records, newest first'),
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Created'), h('th', { scope: 'col' }, 'Notification'), h('th', { scope: 'col' }, 'Status'),
        h('th', { scope: 'col' }, 'Target'), h('th', { scope: 'col', class: 'num' }, 'Devices'), h('th', { scope: 'col', class: 'num' }, 'Sent'),
        h('th', { scope: 'col', class: 'num' }, 'Failed'), h('th', { scope: 'col', class: 'num' }, 'Invalid tokens'), h('th', { scope: 'col' }, 'Progress'), h('th', { scope: 'col' }, 'Channels (sent/targets)'))),
      h('tbody', {}, rows.map((r) => h('tr', { 'data-oid': r.objectId, 'data-status': r.status },
        h('td', {}, fmtTime(r.createdAt)),
        h('td', { class: 'wrap' }, h('a', { href: `#/record/${encodeURIComponent(r.objectId)}` }, r.notificationId), h('div', { class: 'muted' }, alertOf(r.msg))),
        h('td', {}, statusBadge(r.status)),
        h('td', { class: 'wrap' }, targetOf(r)),
        h('td', { class: 'num' }, fmtNum(r.devices)),
        h('td', { class: 'num' }, fmtNum(r.successes)),
        h('td', { class: r.failures ? 'num bad' : 'num' }, fmtNum(r.failures)),
        h('td', { class: 'num' }, fmtNum(r.invalidTokens)),
        h('td', {}, progressCell(r)),
        h('td', {}, channelChips(r))))))));
    return rows.some((r) => ACTIVE.has(r.status)) ? LIVE_MS : IDLE_MS;
  });
}

// ---------- one record ----------

function recordView(v, oid) {
  const body = h('div', { id: 'record' }, h('p', { class: 'empty' }, 'Loading…'));
  show('Push record', h('p', {}, h('a', { href: '#/records' }, '← Push records')), body);
  v.poll(async () => {
    let r;
    try {
      r = await call('GET', `/1.1/tables/Notifications/${encodeURIComponent(oid)}`);
    } catch (e) {
      if (e.status === 401) throw e;
      body.replaceChildren(errorBox(e.status === 404 ? new Error('This push record does not exist (a cancelled push is removed).') : e));
      return 0;
    }
    if (!v.alive()) return 0;
    const active = ACTIVE.has(r.status);
    const cancel = active ? h('button', {
      type: 'button', class: 'danger', id: 'cancel-push',
      onclick: async () => {
        if (!confirm(`Cancel push ${r.notificationId}? Devices not yet sent to will not get it, and its record is removed.`)) return;
        try {
          await call('DELETE', `/1.1/notifications/${encodeURIComponent(r.notificationId)}`);
          toast(`Push ${r.notificationId} cancelled`);
          location.hash = '#/records';
        } catch (e) {
          body.prepend(errorBox(e));
        }
      },
    }, 'Cancel push') : null;
    const by = (r.counts && r.counts.byChannel) || {};
    replaceKeepingFocus(body, ...[
      h('div', { class: 'bar' }, h('h1', { class: 'grow' }, 'Push ', h('code', {}, r.notificationId), statusBadge(r.status)), cancel),
      h('div', { class: 'card' }, h('dl', { class: 'grid' },
        dt('Created', fmtTime(r.createdAt)), dt('Updated', fmtTime(r.updatedAt)), dt('Target', targetOf(r)),
        dt('Devices', fmtNum(r.devices)), dt('Sent', fmtNum(r.successes)), dt('Failed', h('span', { class: r.failures ? 'bad' : null }, fmtNum(r.failures))),
        dt('Expired', fmtNum(r.expired)), dt('Invalid tokens', fmtNum(r.invalidTokens)), dt('Pending', fmtNum(r.pending || 0)),
        dt('Environment', r.prod || 'prod'), r['push-time'] ? dt('Push time', fmtTime(r['push-time'])) : null,
        dt('Progress', progressCell(r)))),
      h('h2', {}, 'Delivery funnel by channel'),
      h('p', { class: 'hint' }, 'Targets = sent + failed + expired + deferred + pending. Arrived: sent and acknowledged by the device or confirmed by a vendor receipt.'),
      Object.keys(by).length ? h('table', { id: 'record-channels' },
        h('thead', {}, h('tr', {}, ['Channel', 'Targets', 'Sent', 'Arrived', 'Failed', 'Expired', 'Deferred', 'Pending', 'Failed by'].map((c, i) => h('th', { scope: 'col', class: i && i < 8 ? 'num' : null }, c)))),
        h('tbody', {}, Object.keys(by).sort().map((ch) => h('tr', {},
          h('th', { scope: 'row' }, ch),
          ...['targets', 'sent', 'arrived', 'failed', 'expired', 'deferred', 'pending'].map((k) => h('td', { class: 'num' }, fmtNum(by[ch][k] ?? (k === 'arrived' ? by[ch].arrivals : 0) ?? 0))),
          h('td', { class: 'failed-by' }, failedByText(by[ch].failedBy)))))) : h('p', { class: 'empty' }, 'No targets counted yet.'),
      h('h2', {}, 'Failure reasons'),
      r.errors && r.errors.length ? h('ul', { class: 'errors', id: 'record-errors' }, r.errors.map((e) => h('li', {}, e))) : h('p', { class: 'empty' }, 'None.'),
      r.stopped ? h('p', { class: 'error' }, `Stopped: ${r.stopped}`) : null,
      h('h2', {}, 'Message'),
      h('pre', { tabindex: 0, 'aria-label': 'Message data' }, JSON.stringify(r.msg, null, 2)),
    ].filter(Boolean));
    return active ? LIVE_MS : 0;
  });
}

// failedByText lists a funnel's failure classes, largest first: "invalid_token 10, rejected 2".
function failedByText(fb) {
  const ks = Object.keys(fb || {}).filter((k) => fb[k] > 0).sort((a, b) => fb[b] - fb[a] || (a < b ? -1 : 1));
  return ks.length ? ks.map((k) => `${k} ${fmtNum(fb[k])}`).join(', ') : '—';
}

function dt(term, value) {
  return h('div', {}, h('dt', {}, term), h('dd', {}, value));
}

// ---------- scheduled pushes ----------

function scheduledView(v) {
  const body = h('div', { id: 'scheduled' }, h('p', { class: 'empty' }, 'Loading…'));
  show('Scheduled pushes', h('div', { class: 'bar' }, h('h1', { class: 'grow' }, 'Scheduled pushes'), h('a', { class: 'button', href: '#/compose' }, 'New push')), body);
  const load = async () => {
    let res;
    try {
      res = await call('GET', '/1.1/scheduledPushMessages');
    } catch (e) {
      if (e.status === 401) throw e;
      body.replaceChildren(errorBox(e));
      return IDLE_MS;
    }
    if (!v.alive()) return 0;
    const rows = (res.results || []).sort((a, b) => a.expire_time - b.expire_time);
    if (!rows.length) {
      body.replaceChildren(h('p', { class: 'empty', id: 'scheduled-empty' }, 'No scheduled pushes waiting.'));
      return IDLE_MS;
    }
    replaceKeepingFocus(body, h('table', { id: 'scheduled-table' },
      h('caption', { class: 'sr-only' }, 'Scheduled pushes, soonest first'),
      h('thead', {}, h('tr', {}, ['Id', 'Sends at', 'Notification', 'Message', 'Target'].map((c) => h('th', { scope: 'col' }, c)), h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))),
      h('tbody', {}, rows.map((s) => {
        const m = s.push_msg || {};
        const q = m.where && m.where.query;
        return h('tr', { 'data-id': s.id },
          h('td', {}, String(s.id)),
          h('td', {}, fmtTime(new Date(s.expire_time).toISOString())),
          h('td', {}, m.notificationId || ''),
          h('td', { class: 'wrap' }, alertOf(m.msg)),
          h('td', { class: 'wrap' }, q && Object.keys(q).length ? JSON.stringify(q) : 'all devices'),
          h('td', {}, h('button', {
            type: 'button', class: 'danger small', 'aria-label': `Cancel scheduled push ${s.id}`,
            onclick: async () => {
              if (!confirm(`Cancel scheduled push ${s.id}? It will not be sent.`)) return;
              try {
                await call('DELETE', `/1.1/scheduledPushMessages/${encodeURIComponent(s.id)}`);
                toast(`Scheduled push ${s.id} cancelled`);
                load();
              } catch (e) {
                body.prepend(errorBox(e));
              }
            },
          }, 'Cancel')));
      }))));
    return IDLE_MS;
  };
  v.poll(load);
}

// ---------- compose ----------

function composeView() {
  const field = (id, label, input, hint) => [h('label', { for: id }, label), input, hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null];
  const radio = (value, label, checked) => h('label', {}, h('input', { type: 'radio', name: 'target', value, checked, id: `target-${value}` }), label);
  const channels = h('input', { type: 'text', id: 'channels', 'aria-describedby': 'channels-hint', placeholder: 'deals, news' });
  const where = h('textarea', { id: 'where', class: 'code', 'aria-describedby': 'where-hint', placeholder: '{"deviceType": "ios", "lang": {"$in": ["en", "fr"]}}' });
  const alert = h('input', { type: 'text', id: 'alert', required: true });
  const title = h('input', { type: 'text', id: 'title' });
  const pushTime = h('input', { type: 'datetime-local', id: 'push-time', 'aria-describedby': 'push-time-hint' });
  const prod = h('select', { id: 'prod' }, h('option', { value: '' }, 'default (prod)'), h('option', { value: 'prod' }, 'prod'), h('option', { value: 'dev' }, 'dev'));
  const expiry = h('input', { type: 'number', id: 'expiration-interval', min: 0, step: 1, 'aria-describedby': 'expiration-interval-hint' });
  const platform = Object.fromEntries(PLATFORMS.map((p) => [p, h('textarea', { id: `data-${p}`, class: 'code', placeholder: p === 'ios' ? '{"badge": "Increment", "sound": "default"}' : '{"title": "…"}' })]));
  const channelsBox = h('div', {}, field('channels', 'Channels', channels, 'Comma-separated channel names.'));
  const whereBox = h('div', {}, field('where', 'Where (JSON)', where, 'A query over installations, as in Installations; channels and dates as the API takes them.'));
  const out = h('div', { id: 'compose-result', 'aria-live': 'polite' });
  const review = h('button', { type: 'submit', id: 'review' }, 'Count audience');
  const form = h('form', { id: 'compose', novalidate: true },
    h('h1', {}, 'New push'),
    h('div', { class: 'cols' },
      h('div', {},
        h('fieldset', {}, h('legend', {}, 'Audience'),
          h('div', { class: 'radios', role: 'radiogroup', 'aria-label': 'Target' }, radio('all', 'All devices', true), radio('channels', 'Channels', false), radio('where', 'Where query', false)),
          channelsBox, whereBox),
        h('fieldset', {}, h('legend', {}, 'Delivery'),
          field('push-time', 'Send at (your local time)', pushTime, 'Empty: now. At least a minute ahead schedules the push.'),
          field('prod', 'iOS environment', prod),
          field('expiration-interval', 'Expires after (seconds)', expiry, 'Empty: no expiry.'))),
      h('div', {},
        h('fieldset', {}, h('legend', {}, 'Message'),
          field('alert', 'Alert', alert),
          field('title', 'Title', title),
          h('details', {}, h('summary', {}, 'Per-platform data (JSON objects)'),
            PLATFORMS.map((p) => field(`data-${p}`, p, platform[p])))))),
    h('p', {}, review),
    out);
  const value = () => form.querySelector('input[name=target]:checked').value;
  const sync = () => {
    channelsBox.hidden = channels.disabled = value() !== 'channels';
    whereBox.hidden = where.disabled = value() !== 'where';
  };
  form.addEventListener('change', (ev) => {
    if (ev.target.name === 'target') sync();
    out.replaceChildren(); // the reviewed count no longer holds
  });
  form.addEventListener('input', () => out.replaceChildren());
  sync();

  const build = () => {
    const data = {};
    if (alert.value.trim()) data.alert = alert.value.trim();
    if (title.value.trim()) data.title = title.value.trim();
    for (const p of PLATFORMS) {
      const t = platform[p].value.trim();
      if (!t) continue;
      let o;
      try { o = JSON.parse(t); } catch (e) { throw new Error(`${p} data is not JSON: ${e.message}`); }
      if (!o || typeof o !== 'object' || Array.isArray(o)) throw new Error(`${p} data must be a JSON object`);
      data[p] = o;
    }
    if (!data.alert && !Object.keys(data).some((k) => PLATFORMS.includes(k))) throw new Error('Write an alert.');
    const body = { data };
    if (value() === 'channels') {
      const list = channels.value.split(',').map((s) => s.trim()).filter(Boolean);
      if (!list.length) throw new Error('Name at least one channel.');
      body.channels = list;
    } else if (value() === 'where') {
      let w;
      try { w = JSON.parse(where.value); } catch (e) { throw new Error(`Where is not JSON: ${e.message}`); }
      if (!w || typeof w !== 'object' || Array.isArray(w)) throw new Error('Where must be a JSON object.');
      body.where = w;
    }
    if (pushTime.value) body.push_time = new Date(pushTime.value).toISOString();
    if (prod.value) body.prod = prod.value;
    if (expiry.value) body.expiration_interval = Number(expiry.value);
    return body;
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let body;
    try {
      body = build();
    } catch (e) {
      out.replaceChildren(errorBox(e));
      return;
    }
    review.disabled = true;
    out.replaceChildren(h('p', { class: 'empty' }, 'Counting the audience…'));
    try {
      const dry = await call('POST', '/1.1/push', { ...body, dry_run: true });
      const by = dry.byChannel || {};
      const send = h('button', { type: 'button', id: 'send' }, body.push_time ? `Schedule for ${fmtNum(dry.devices)} devices` : `Send to ${fmtNum(dry.devices)} devices`);
      send.addEventListener('click', async () => {
        send.disabled = true;
        try {
          const res = await call('POST', '/1.1/push', body);
          toast('Push accepted');
          location.hash = body.push_time && res.objectId ? '#/scheduled' : `#/record/${encodeURIComponent(res.objectId)}`;
        } catch (e) {
          out.append(errorBox(e));
          send.disabled = false;
        }
      });
      out.replaceChildren(h('div', { class: 'card review', id: 'review-result' },
        h('p', {}, 'This push would reach ', h('span', { class: 'big', id: 'audience' }, fmtNum(dry.devices)), ' devices now.'),
        h('div', { class: 'chips' }, Object.keys(by).sort().filter((ch) => by[ch]).map((ch) => h('span', { class: 'chip', 'data-channel': ch }, `${ch} ${fmtNum(by[ch])}`))),
        dry.invalidTokens ? h('p', { class: 'hint' }, `${fmtNum(dry.invalidTokens)} listed tokens are known dead.`) : null,
        h('p', {}, send)));
      send.focus();
    } catch (e) {
      if (e.status === 401) return signOut('Your key was refused: sign in again.');
      out.replaceChildren(errorBox(e));
    } finally {
      review.disabled = false;
    }
  });
  show('New push', form);
}

// ---------- installations ----------

function installationsView() {
  const where = h('textarea', { id: 'inst-where', class: 'code', 'aria-describedby': 'inst-where-hint', placeholder: '{"channels": "deals", "deviceType": "ios"}' });
  const limit = h('input', { type: 'number', id: 'inst-limit', min: 1, max: 1000, value: '50' });
  const out = h('div', { id: 'inst-result', 'aria-live': 'polite' });
  const form = h('form', { id: 'inst-search' },
    h('h1', {}, 'Installations'),
    h('div', { class: 'cols' },
      h('div', {}, h('label', { for: 'inst-where' }, 'Where (JSON)'), where,
        h('p', { class: 'hint', id: 'inst-where-hint' }, 'Empty: every installation. Operators: $eq $ne $in $nin $gt $lt $exists $regex $all, …')),
      h('div', {}, h('label', { for: 'inst-limit' }, 'Show at most'), limit,
        h('p', {}, h('button', { type: 'submit', id: 'inst-search-submit' }, 'Search')))),
    out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let w;
    if (where.value.trim()) {
      try { w = JSON.parse(where.value); } catch (e) { out.replaceChildren(errorBox(new Error(`Where is not JSON: ${e.message}`))); return; }
    }
    out.replaceChildren(h('p', { class: 'empty' }, 'Searching…'));
    try {
      const res = await call('GET', `/1.1/installations${query({ where: w, limit: limit.value, count: 1, order: '-updatedAt' })}`);
      const rows = res.results || [];
      out.replaceChildren(
        h('p', { id: 'inst-count' }, `${fmtNum(res.count)} installations match`, rows.length < res.count ? ` (showing ${fmtNum(rows.length)})` : ''),
        rows.length ? h('table', { id: 'inst-table' },
          h('caption', { class: 'sr-only' }, 'Matching installations'),
          h('thead', {}, h('tr', {}, ['objectId', 'Type', 'Device id', 'Vendor', 'Channels', 'Updated'].map((c) => h('th', { scope: 'col' }, c)))),
          h('tbody', {}, rows.map((i) => h('tr', {},
            h('td', {}, h('code', {}, i.objectId)),
            h('td', {}, i.deviceType || ''),
            h('td', {}, h('code', { title: i.deviceToken || i.registrationId || i.installationId || '' }, short(i.deviceToken || i.registrationId || i.installationId))),
            h('td', {}, i.vendor || ''),
            h('td', { class: 'wrap' }, (i.channels || []).join(', ')),
            h('td', {}, fmtTime(i.updatedAt)))))) : null);
    } catch (e) {
      if (e.status === 401) return signOut('Your key was refused: sign in again.');
      out.replaceChildren(errorBox(e));
    }
  });
  show('Installations', form);
}

function short(s) {
  if (!s) return '';
  return s.length > 24 ? `${s.slice(0, 12)}…${s.slice(-8)}` : s;
}

// ---------- routing ----------

function route() {
  const s = session();
  if (!s) return signOut();
  const v = newView();
  const [, section = 'records', arg] = (location.hash || '#/records').split('/');
  document.getElementById('nav').hidden = false;
  document.getElementById('who').hidden = false;
  document.getElementById('who-app').textContent = s.appId;
  const current = section === 'record' ? 'records' : section;
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.section === current) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  switch (section) {
    case 'record': recordView(v, decodeURIComponent(arg || '')); break;
    case 'scheduled': scheduledView(v); break;
    case 'compose': composeView(v); break;
    case 'installations': installationsView(v); break;
    default: recordsView(v);
  }
  main.focus({ preventScroll: true });
}

document.getElementById('signout').addEventListener('click', () => signOut());
window.addEventListener('hashchange', route);
route();
