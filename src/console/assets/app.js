// tablestore console: a client of the Table REST API and /_tablestore/insight, like any SDK.
// Requests are signed here, in the browser, with the account key the user typed (Shared Key
// Lite, HMAC-SHA256 through WebCrypto); the key stays in this tab's sessionStorage and never
// goes into a URL. With --disable-auth requests go unsigned. Data is only ever inserted into
// the page as text (textContent), never as HTML.
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg'; // a namespace name, not a fetch
const $ = (id) => document.getElementById(id);
const TYPES = ['Edm.String', 'Edm.Int32', 'Edm.Int64', 'Edm.Double', 'Edm.Boolean', 'Edm.DateTime', 'Edm.Guid', 'Edm.Binary'];
const state = { auth: true, published: {}, account: '', key: null, table: null, next: null, tablesNext: null, etag: null };

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function status(text, ok) {
  const s = $('status');
  s.textContent = text;
  s.className = ok ? 'ok' : 'error';
}

function b64ToBytes(b64) {
  const bin = atob(b64.trim());
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

async function signature(stringToSign) {
  if (!window.crypto || !crypto.subtle) {
    throw new Error('This browser offers WebCrypto only on https or localhost pages; open the console on 127.0.0.1 or localhost, or over HTTPS.');
  }
  const key = await crypto.subtle.importKey('raw', b64ToBytes(state.key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const sig = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(stringToSign));
  return btoa(String.fromCharCode(...new Uint8Array(sig)));
}

// One API call. `path` is below the origin and already encoded.
async function api(method, path, { body, headers = {} } = {}) {
  const url = new URL(path, location.origin);
  const h = {
    'x-ms-version': '2019-02-02',
    'Accept': 'application/json;odata=minimalmetadata',
    'DataServiceVersion': '3.0',
    ...headers,
  };
  if (body !== undefined) h['Content-Type'] = 'application/json';
  if (state.auth) {
    if (!state.key) throw new Error('Enter the account key first.');
    const date = new Date().toUTCString();
    let resource = '/' + state.account + url.pathname;
    const comp = url.searchParams.get('comp');
    if (comp !== null) resource += '?comp=' + comp;
    h['x-ms-date'] = date;
    h['Authorization'] = 'SharedKeyLite ' + state.account + ':' + (await signature(date + '\n' + resource));
  }
  const r = await fetch(url, {
    method, headers: h, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit', cache: 'no-store', redirect: 'error',
  });
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (_) { /* not JSON */ }
  if (!r.ok) {
    const err = json && json['odata.error'];
    const code = (err && err.code) || r.headers.get('x-ms-error-code') || '';
    const message = err && err.message ? (err.message.value || err.message) : text.slice(0, 200);
    const e = new Error(r.status + ' ' + code + ': ' + String(message).split('\n')[0]);
    e.status = r.status;
    throw e;
  }
  return { headers: r.headers, json };
}

const q = (s) => encodeURIComponent(s.replace(/'/g, "''"));
const tablePath = (t) => '/' + state.account + '/' + encodeURIComponent(t);
const entityPath = (pk, rk) => tablePath(state.table) + "(PartitionKey='" + q(pk) + "',RowKey='" + q(rk) + "')";

// ---- tables ----
async function loadTables(more) {
  let path = '/' + state.account + '/Tables';
  if (more && state.tablesNext) path += '?NextTableName=' + encodeURIComponent(state.tablesNext);
  const { headers, json } = await api('GET', path);
  const list = $('tables');
  if (!more) list.replaceChildren();
  for (const t of json.value) {
    const li = el('li');
    const a = el('a', t.TableName);
    a.dataset.table = t.TableName;
    if (t.TableName === state.table) a.className = 'current';
    a.addEventListener('click', () => openTable(t.TableName));
    li.append(a);
    list.append(li);
  }
  state.tablesNext = headers.get('x-ms-continuation-NextTableName');
  $('more-tables').hidden = !state.tablesNext;
  showEmptyState(!list.children.length);
}

// Connected to an account without tables: say what to do instead of showing a blank page.
function showEmptyState(empty) {
  $('empty-state').hidden = !empty;
  if (empty) {
    state.table = null;
    $('table-view').hidden = true;
  }
}

async function openTable(name) {
  state.table = name;
  $('table-view').hidden = false;
  $('table-name').textContent = name;
  for (const a of document.querySelectorAll('#tables a')) a.className = a.dataset.table === name ? 'current' : '';
  $('empty-state').hidden = true;
  $('filter').value = '';
  queryError('');
  clearEditor();
  await runQuery(false);
}

// ---- entities ----
function typeOf(entity, name) {
  const annotated = entity[name + '@odata.type'];
  if (annotated) return annotated;
  const v = entity[name];
  if (typeof v === 'boolean') return 'Edm.Boolean';
  if (typeof v === 'number') return Number.isInteger(v) ? 'Edm.Int32' : 'Edm.Double';
  return 'Edm.String';
}

function properties(entity) {
  return Object.keys(entity)
    .filter((k) => !k.includes('@') && !k.startsWith('odata.') && !['PartitionKey', 'RowKey', 'Timestamp'].includes(k))
    .map((k) => ({ name: k, type: typeOf(entity, k), value: entity[k] }));
}

// A failed query leaves nothing of the previous one on screen: its rows, verdict and next-page
// button go, and the error is shown next to the query box.
function clearResults() {
  $('entities').tHead.replaceChildren();
  $('entities').tBodies[0].replaceChildren();
  $('verdict').textContent = '';
  delete $('verdict').dataset.class;
  state.next = null;
  $('next-page').hidden = true;
}

function queryError(message) {
  const e = $('query-error');
  e.textContent = message;
  e.hidden = !message;
}

async function runQuery(nextPage) {
  const params = new URLSearchParams();
  const filter = $('filter').value.trim();
  if (filter) params.set('$filter', filter);
  if ($('select').value.trim()) params.set('$select', $('select').value.trim());
  params.set('$top', $('top').value.trim() || '20');
  if (nextPage && state.next) {
    params.set('NextPartitionKey', state.next[0]);
    params.set('NextRowKey', state.next[1]);
  }
  const path = tablePath(state.table) + '()?' + params.toString().replace(/\+/g, '%20');
  let reply;
  try {
    reply = await api('GET', path, { headers: { 'x-tablestore-debug-plan': 'true' } });
  } catch (e) {
    clearResults();
    queryError('The query failed: ' + e.message);
    return;
  }
  queryError('');
  const { headers, json } = reply;
  const cls = headers.get('x-tablestore-class');
  $('verdict').textContent = 'Query class: ' + cls + ' — examined ' + headers.get('x-tablestore-examined') +
    ', returned ' + headers.get('x-tablestore-returned') + ', pages for the whole result: ' + headers.get('x-tablestore-pages');
  $('verdict').dataset.class = cls;
  const npk = headers.get('x-ms-continuation-NextPartitionKey');
  state.next = npk ? [npk, headers.get('x-ms-continuation-NextRowKey') || ''] : null;
  $('next-page').hidden = !state.next;
  renderEntities(json.value);
  await loadInsight();
}

function renderEntities(entities) {
  const names = [];
  for (const e of entities) for (const p of properties(e)) if (!names.includes(p.name)) names.push(p.name);
  const head = el('tr');
  for (const h of ['PartitionKey', 'RowKey', 'Timestamp', ...names]) head.append(el('th', h));
  $('entities').tHead.replaceChildren(head);
  const body = $('entities').tBodies[0];
  body.replaceChildren();
  for (const e of entities) {
    const tr = el('tr');
    tr.append(el('td', e.PartitionKey ?? ''), el('td', e.RowKey ?? ''), el('td', e.Timestamp ?? ''));
    const props = Object.fromEntries(properties(e).map((p) => [p.name, p]));
    for (const n of names) {
      const td = el('td');
      if (props[n]) td.append(el('span', props[n].value), el('span', ' ' + props[n].type.replace('Edm.', ''), 'type'));
      tr.append(td);
    }
    tr.addEventListener('click', () => loadEntity(e.PartitionKey, e.RowKey).catch((x) => status(x.message)));
    body.append(tr);
  }
}

// ---- editor ----
function addProp(p = { name: '', type: 'Edm.String', value: '' }) {
  const row = el('div', undefined, 'prop');
  const name = el('input'); name.placeholder = 'Name'; name.value = p.name; name.className = 'prop-name';
  const type = el('select'); type.className = 'prop-type';
  for (const t of TYPES) { const o = el('option', t); o.value = t; type.append(o); }
  type.value = p.type;
  const value = el('input'); value.placeholder = 'value'; value.value = p.value === null ? '' : String(p.value); value.className = 'prop-value';
  const remove = el('button', '×'); remove.type = 'button'; remove.addEventListener('click', () => row.remove());
  row.append(name, type, value, remove);
  $('props').append(row);
}

function clearEditor() {
  $('pk').value = ''; $('rk').value = ''; $('props').replaceChildren();
  state.etag = null; $('etag').textContent = '(new entity)';
}

async function loadEntity(pk, rk) {
  const { headers, json } = await api('GET', entityPath(pk, rk));
  $('pk').value = pk; $('rk').value = rk;
  $('props').replaceChildren();
  for (const p of properties(json)) addProp(p);
  state.etag = headers.get('ETag') || json['odata.etag'];
  $('etag').textContent = state.etag;
  status('Loaded ' + pk + ' / ' + rk, true);
}

function editorBody() {
  const body = { PartitionKey: $('pk').value, RowKey: $('rk').value };
  for (const row of document.querySelectorAll('#props .prop')) {
    const name = row.querySelector('.prop-name').value.trim();
    if (!name) continue;
    const type = row.querySelector('.prop-type').value;
    const raw = row.querySelector('.prop-value').value;
    let value = raw;
    if (type === 'Edm.Int32' || type === 'Edm.Double') {
      value = Number(raw);
      if (raw.trim() === '' || Number.isNaN(value)) throw new Error(name + ': ' + raw + ' is not a number');
    } else if (type === 'Edm.Boolean') {
      if (!['true', 'false'].includes(raw)) throw new Error(name + ': use true or false');
      value = raw === 'true';
    }
    body[name] = value;
    if (!['Edm.String', 'Edm.Int32', 'Edm.Boolean'].includes(type)) body[name + '@odata.type'] = type;
  }
  return body;
}

async function refreshAfterWrite(message) {
  status(message, true);
  await runQuery(false);
}

async function insertEntity() {
  const { headers } = await api('POST', tablePath(state.table), { body: editorBody(), headers: { Prefer: 'return-no-content' } });
  state.etag = headers.get('ETag'); $('etag').textContent = state.etag;
  await refreshAfterWrite('Inserted.');
}

async function saveEntity() {
  if (!state.etag) throw new Error('Load an entity first (click a row), or use Insert.');
  try {
    const { headers } = await api('PUT', entityPath($('pk').value, $('rk').value), { body: editorBody(), headers: { 'If-Match': state.etag } });
    state.etag = headers.get('ETag'); $('etag').textContent = state.etag;
    await refreshAfterWrite('Saved.');
  } catch (e) {
    if (e.status === 412) throw new Error(e.message + ' — someone changed this entity since you loaded it; click its row to reload it.');
    throw e;
  }
}

async function deleteEntity() {
  const pk = $('pk').value, rk = $('rk').value;
  if (!confirm('Delete entity ' + pk + ' / ' + rk + '?')) return;
  await api('DELETE', entityPath(pk, rk), { headers: { 'If-Match': state.etag || '*' } });
  clearEditor();
  await refreshAfterWrite('Deleted.');
}

// ---- insight: advice and partition heat ----
async function loadInsight() {
  const { json } = await api('GET', '/_tablestore/insight?settle');
  const account = json.accounts[state.account] || { tables: [], advice: [] };
  const table = account.tables.find((t) => t.name.toLowerCase() === state.table.toLowerCase());
  const list = $('advice');
  list.replaceChildren();
  for (const a of [...account.advice, ...(table ? table.advice : [])]) {
    const li = el('li');
    li.dataset.rule = a.id;
    li.append(el('strong', a.id + ' '), el('span', a.problem + ' ' + a.suggestion + ' '),
      el('div', a.guide_page + ': ' + a.guide_section, 'guide'), el('div', 'Observed: ' + a.example + ' (×' + a.count + ')', 'type'));
    list.append(li);
  }
  if (!list.children.length) list.append(el('li', 'No advice for this table so far.'));
  drawHeat(table ? table.hot_partitions : []);
  showStoreSize(json.store);
}

function bytesText(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + units[i];
}

// The whole server's data (all accounts): entities, their size, and the folder's size on disk.
function showStoreSize(store) {
  const p = $('store-size');
  if (!store) { p.textContent = 'This server does not count its data.'; return; }
  p.dataset.entities = store.entities;
  p.dataset.logicalBytes = store.logicalBytes;
  let text = store.entities + ' entities, ' + bytesText(store.logicalBytes) + ' of data';
  if (store.diskBytes == null) text += ', in memory';
  else text += ', ' + bytesText(store.diskBytes) + ' on disk' +
    (store.diskToLogical == null ? '' : ' (' + store.diskToLogical + '× the data)');
  p.textContent = text + ' (all accounts).';
}

function drawHeat(partitions) {
  const top = partitions.slice(0, 12);
  const width = 420, bar = 18, gap = 4, label = 140;
  const svg = document.createElementNS(SVG_NS, 'svg');
  const height = Math.max(1, top.length) * (bar + gap);
  svg.setAttribute('width', width);
  svg.setAttribute('height', height);
  svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height); // scales down on narrow screens
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', 'Entities served per partition');
  const max = Math.max(1, ...top.map((p) => p.entities));
  top.forEach((p, i) => {
    const y = i * (bar + gap);
    const name = document.createElementNS(SVG_NS, 'text');
    name.setAttribute('x', 0); name.setAttribute('y', y + bar - 5); name.setAttribute('font-size', 12);
    name.textContent = p.partition_key.length > 18 ? p.partition_key.slice(0, 17) + '…' : p.partition_key;
    const rect = document.createElementNS(SVG_NS, 'rect');
    const w = Math.max(2, ((width - label - 60) * p.entities) / max);
    rect.setAttribute('x', label); rect.setAttribute('y', y); rect.setAttribute('height', bar); rect.setAttribute('width', w);
    const heat = Math.round(200 - 160 * (p.entities / max));
    rect.setAttribute('fill', 'rgb(230,' + heat + ',60)');
    const count = document.createElementNS(SVG_NS, 'text');
    count.setAttribute('x', label + w + 4); count.setAttribute('y', y + bar - 5); count.setAttribute('font-size', 12);
    count.textContent = String(p.entities);
    svg.append(name, rect, count);
  });
  $('heat').replaceChildren(svg);
  if (!top.length) $('heat').append(el('p', 'No partition traffic yet.'));
}

// ---- wiring ----
function guard(fn) {
  return (ev) => {
    if (ev) ev.preventDefault();
    Promise.resolve().then(fn).catch((e) => status(e.message));
  };
}

async function connect() {
  state.account = $('account').value;
  if (state.auth) {
    state.key = $('key').value.trim() || sessionStorage.getItem('tablestore-key:' + state.account);
    if (!state.key) throw new Error('Enter the account key.');
    sessionStorage.setItem('tablestore-key:' + state.account, state.key);
    $('key').value = '';
  }
  await loadTables(false);
  $('who').textContent = 'Connected to ' + state.account;
  $('key-hint').hidden = true;
  $('key-published').hidden = true;
  status('Connected.', true);
}

// The development account's (or the Cosmos DB emulator's) published key, when the server
// serves the selected account with it and this tab holds no key for it: filled in, not sent.
function fillPublishedKey() {
  const account = $('account').value;
  const published = state.auth && !sessionStorage.getItem('tablestore-key:' + account) ? state.published[account] : undefined;
  $('key').value = published || '';
  $('key-published').hidden = !published;
}

async function start() {
  const r = await fetch('config.json', { credentials: 'omit', cache: 'no-store' });
  const config = await r.json();
  state.auth = config.auth;
  $('key-label').hidden = !state.auth;
  $('key-hint').hidden = !state.auth;
  state.published = config.published_keys || {};
  for (const a of config.accounts) { const o = el('option', a); o.value = a; $('account').append(o); }
  fillPublishedKey();
  $('account').addEventListener('change', fillPublishedKey);
  $('signin').addEventListener('submit', guard(connect));
  $('more-tables').addEventListener('click', guard(() => loadTables(true)));
  $('create-table').addEventListener('submit', guard(async () => {
    await api('POST', '/' + state.account + '/Tables', { body: { TableName: $('new-table').value.trim() }, headers: { Prefer: 'return-no-content' } });
    const name = $('new-table').value.trim();
    $('new-table').value = '';
    await loadTables(false);
    await openTable(name);
    status('Created table ' + name + '.', true);
  }));
  $('delete-table').addEventListener('click', guard(async () => {
    if (!confirm('Delete table ' + state.table + ' and all its entities?')) return;
    await api('DELETE', '/' + state.account + "/Tables('" + q(state.table) + "')");
    status('Deleted table ' + state.table + '.', true);
    state.table = null;
    $('table-view').hidden = true;
    await loadTables(false);
  }));
  $('reset-account').addEventListener('click', async () => {
    // Said beside the button: the editor's status line goes with the table view.
    const said = $('reset-status');
    if (!confirm('Reset account ' + state.account + '? Every table, entity, ACL and service property goes; what the server started with (its --seed) comes back.')) return;
    try {
      const { json } = await api('POST', '/_tablestore/reset?account=' + encodeURIComponent(state.account));
      state.table = null;
      $('table-view').hidden = true;
      await loadTables(false);
      said.textContent = 'Reset ' + state.account + ': ' + json.tablesRemoved + ' table(s) removed; ' + json.tables + ' table(s) and ' + json.entities + ' entities from the start-up state.';
      said.className = 'ok';
    } catch (e) {
      said.textContent = e.message;
      said.className = 'error';
    }
  });
  $('query').addEventListener('submit', guard(() => runQuery(false)));
  $('next-page').addEventListener('click', guard(() => runQuery(true)));
  $('add-prop').addEventListener('click', () => addProp());
  $('insert').addEventListener('click', guard(insertEntity));
  $('save').addEventListener('click', guard(saveEntity));
  $('delete-entity').addEventListener('click', guard(deleteEntity));
  $('clear').addEventListener('click', clearEditor);
  if (!state.auth || sessionStorage.getItem('tablestore-key:' + $('account').value)) await connect();
}

start().catch((e) => status(e.message));
