// confighub status page: follows one stream's WatchStatus events over
// /api/v1/watch (Server-Sent Events read with fetch, so the token travels in
// the Authorization header, never in a URL) and updates only the rows an
// event touches.
'use strict';
(() => {
  const TOKEN_KEY = 'confighub.token';
  const STATES = ['PENDING', 'APPLYING', 'APPLIED', 'DEGRADED', 'FAILED', 'BACKOFF', 'WAITING', 'SKIPPED'];
  const GENERATIONS_SHOWN = 10;
  const $ = (id) => document.getElementById(id);

  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let stream = '';
  let rev = ''; // last revision seen: a reconnect resumes after it
  let abort = null;
  let current = { generation: 0, hash: '' };
  const sinks = new Map(); // name -> {st, row, cells, state, kind}
  const gens = new Map(); // generation -> GenerationStatus
  const counts = new Map(); // state -> number of sinks
  const retrying = new Set(); // entries with a next retry time
  const kinds = new Set();
  let queue = [];
  let scheduled = false;
  let dirty = { gens: false, rejections: false, summary: false };
  let firstRender = false;

  class AuthError extends Error {}

  function headers() {
    return token ? { Authorization: 'Bearer ' + token } : {};
  }

  async function api(path, signal) {
    const res = await fetch(path, { headers: headers(), cache: 'no-store', signal });
    if (res.status === 401 || res.status === 403) {
      let msg = res.status === 403 ? 'this token may not read status' : 'a read token is needed';
      try { const b = await res.json(); if (b.error) msg = b.error; } catch (e) { /* keep msg */ }
      throw new AuthError(msg);
    }
    if (!res.ok) {
      let msg = res.status + ' ' + res.statusText;
      try { const b = await res.json(); if (b.error) msg = b.error; } catch (e) { /* keep msg */ }
      throw new Error(msg);
    }
    return res;
  }

  function setConn(state, text) {
    const c = $('conn');
    c.dataset.conn = state;
    c.textContent = text || state;
  }

  function showLogin(msg) {
    if (abort) abort.abort();
    $('main').hidden = true;
    $('login').hidden = false;
    $('logout').hidden = true;
    $('login-error').textContent = token ? msg : '';
    setConn('locked', 'token needed');
    $('token').focus();
  }

  async function start() {
    let list;
    try {
      list = await (await api('api/v1/streams')).json();
    } catch (e) {
      if (e instanceof AuthError) { showLogin(e.message); return; }
      setConn('retrying', 'hub unreachable: ' + e.message);
      setTimeout(start, 2000);
      return;
    }
    $('login').hidden = true;
    $('logout').hidden = !token;
    const sel = $('stream');
    sel.replaceChildren();
    for (const s of list.streams) sel.append(new Option(s, s));
    const want = new URLSearchParams(location.hash.slice(1)).get('stream');
    stream = list.streams.includes(want) ? want : (list.streams.includes('default') ? 'default' : (list.streams[0] || 'default'));
    sel.value = stream;
    $('main').hidden = false;
    follow();
  }

  function reset() {
    rev = '';
    for (const e of sinks.values()) e.row.remove();
    sinks.clear(); gens.clear(); counts.clear(); retrying.clear();
    current = { generation: 0, hash: '' };
    queue = [];
    dirty = { gens: true, rejections: true, summary: true };
  }

  // follow watches the stream until it is changed, resuming after the last
  // revision seen when the connection drops.
  async function follow() {
    if (abort) abort.abort();
    const ctl = new AbortController();
    abort = ctl;
    let wait = 500;
    while (!ctl.signal.aborted) {
      try {
        setConn('connecting', 'connecting');
        const q = new URLSearchParams({ stream });
        if (rev) q.set('from', rev);
        const res = await api('api/v1/watch?' + q, ctl.signal);
        setConn('live', 'live');
        wait = 500;
        await readEvents(res.body, ctl.signal);
      } catch (e) {
        if (ctl.signal.aborted) return;
        if (e instanceof AuthError) { showLogin(e.message); return; }
        setConn('retrying', 'reconnecting: ' + e.message);
      }
      if (ctl.signal.aborted) return;
      setConn('retrying', 'reconnecting');
      await new Promise((r) => setTimeout(r, wait));
      wait = Math.min(wait * 2, 10000);
    }
  }

  async function readEvents(body, signal) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    while (!signal.aborted) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let data = '', type = 'message';
        for (const line of block.split('\n')) {
          if (line.startsWith('data: ')) data += line.slice(6);
          else if (line.startsWith('event: ')) type = line.slice(7);
        }
        if (type === 'end') return;
        if (data) enqueue(JSON.parse(data));
      }
    }
  }

  function enqueue(ev) {
    queue.push(ev);
    if (!scheduled) {
      scheduled = true;
      // A frame batches a burst of events into one layout; the timeout
      // keeps a hidden tab (no frames) current.
      const t = setTimeout(flush, 100);
      requestAnimationFrame(() => { clearTimeout(t); flush(); });
    }
  }

  function flush() {
    if (!scheduled) return;
    scheduled = false;
    const evs = queue;
    queue = [];
    for (const ev of evs) apply(ev);
    render();
  }

  function apply(ev) {
    if (ev.revision) rev = ev.revision;
    if (ev.snapshot) applySnapshot(ev.snapshot);
    else if (ev.sink) upsert(ev.sink);
    else if (ev.sinkRemoved) remove(ev.sinkRemoved);
    else if (ev.generation) setGeneration(ev.generation);
  }

  function setGeneration(g) {
    const n = Number(g.generation || 0);
    gens.set(n, g);
    if (n >= current.generation) current = { generation: n, hash: g.hash || '' };
    dirty.gens = dirty.summary = true;
  }

  function applySnapshot(s) {
    gens.clear();
    current = { generation: Number(s.generation || 0), hash: s.hash || '' };
    for (const g of s.generations || []) setGeneration(g);
    const keep = new Set();
    const fresh = sinks.size === 0;
    const frag = fresh ? document.createDocumentFragment() : null;
    const list = (s.sinks || []).slice().sort((a, b) => (a.sink < b.sink ? -1 : a.sink > b.sink ? 1 : 0));
    for (const st of list) {
      keep.add(st.sink);
      upsert(st, frag);
    }
    if (frag) $('sinks').tBodies[0].append(frag);
    if (!fresh) for (const name of [...sinks.keys()]) if (!keep.has(name)) remove(name);
    dirty.gens = dirty.rejections = dirty.summary = true;
  }

  function stateName(st) {
    return (st.state || 'SINK_STATE_UNSPECIFIED').replace('SINK_STATE_', '');
  }

  function count(state, d) {
    counts.set(state, (counts.get(state) || 0) + d);
  }

  const CELLS = ['name', 'kind', 'state', 'gen', 'attempts', 'retry', 'duration', 'error'];

  function newRow(st) {
    const row = document.createElement('tr');
    const cells = {};
    for (const c of CELLS) {
      const td = document.createElement('td');
      td.className = c;
      row.append(td);
      cells[c] = td;
    }
    cells.err = cells.error;
    cells.err.className = 'err';
    const badge = document.createElement('span');
    const reason = document.createElement('div');
    reason.className = 'reason muted';
    cells.state.append(badge, reason);
    cells.badge = badge;
    cells.reason = reason;
    cells.name.textContent = st.sink;
    // A kong-dp sink: the data plane behind it.
    const dp = document.createElement('div');
    dp.className = 'reason muted';
    cells.name.append(dp);
    cells.dp = dp;
    row.dataset.sink = st.sink;
    return { row, cells, st: {}, state: '', kind: '' };
  }

  // dataPlaneText is one line about a Kong data plane in hybrid mode:
  // hostname, version, address, connection, what its last ping said it runs.
  function dataPlaneText(dp) {
    if (!dp) return '';
    const parts = [dp.hostname, dp.version, dp.address].filter(Boolean);
    parts.push(dp.connected ? 'connected since ' + fmtTime(dp.connectedSince)
      : 'disconnected' + (dp.disconnectedSince ? ' since ' + fmtTime(dp.disconnectedSince) : ''));
    if (dp.configHash) parts.push('runs ' + dp.configHash.slice(0, 12) + ' (ping ' + fmtTime(dp.lastPing) + ')');
    if (dp.syncStatus && dp.syncStatus !== 'normal') parts.push(dp.syncStatus);
    const labels = Object.entries(dp.labels || {}).map(([k, v]) => k + ':' + v).sort();
    if (labels.length) parts.push(labels.join(','));
    return parts.join(' · ');
  }

  function setText(td, text) {
    if (td.textContent !== text) td.textContent = text;
  }

  // upsert updates one sink's row in place (creating it in name order).
  function upsert(st, frag) {
    let e = sinks.get(st.sink);
    if (!e) {
      e = newRow(st);
      sinks.set(st.sink, e);
      if (frag) frag.append(e.row);
      else insertSorted(e);
    }
    const prev = e.st;
    e.st = st;
    const state = stateName(st);
    if (state !== e.state) {
      if (e.state) count(e.state, -1);
      count(state, 1);
      e.state = state;
      e.row.dataset.state = state;
      e.cells.badge.className = 'state ' + state;
      e.cells.badge.textContent = state;
      dirty.summary = true;
    }
    // A sink's rejection changes what the generations table says.
    if (!prev || prev.rejectedGeneration !== st.rejectedGeneration) dirty.gens = true;
    // Why a sink waits or was skipped (gate, pacing, no configuration yet).
    setText(e.cells.reason, st.reason || '');
    setText(e.cells.dp, dataPlaneText(st.dataPlane));
    if (st.kind !== e.kind) {
      e.kind = st.kind || '';
      setText(e.cells.kind, e.kind);
      addKind(e.kind);
    }
    setText(e.cells.gen, (st.appliedGeneration || '0') + ' / ' + (st.desiredGeneration || '0'));
    setText(e.cells.attempts, String(st.attempts || 0));
    setText(e.cells.duration, st.lastApplyDuration ? fmtDuration(parseDuration(st.lastApplyDuration)) : '');
    setText(e.cells.err, st.lastError || '');
    if (st.lastErrorCode) e.cells.err.title = 'code: ' + st.lastErrorCode; else e.cells.err.removeAttribute('title');
    if (st.nextRetryTime && state === 'BACKOFF') {
      e.retryAt = Date.parse(st.nextRetryTime);
      retrying.add(e);
    } else {
      e.retryAt = 0;
      retrying.delete(e);
    }
    tick1(e, Date.now());
    const has = (x) => (x.entityErrors && x.entityErrors.length) || (x.excludedEntities && x.excludedEntities.length);
    if (has(prev) || has(st)) dirty.rejections = true;
    e.row.hidden = !matches(e);
  }

  function insertSorted(e) {
    const body = $('sinks').tBodies[0];
    for (const r of body.rows) {
      if (r !== e.row && r.dataset.sink > e.st.sink) { body.insertBefore(e.row, r); return; }
    }
    body.append(e.row);
  }

  function remove(name) {
    const e = sinks.get(name);
    if (!e) return;
    count(e.state, -1);
    retrying.delete(e);
    e.row.remove();
    sinks.delete(name);
    if (e.st.entityErrors && e.st.entityErrors.length) dirty.rejections = true;
    dirty.summary = true;
  }

  function addKind(k) {
    if (!k || kinds.has(k)) return;
    kinds.add(k);
    $('f-kind').append(new Option(k, k));
  }

  // Filters.
  function matches(e) {
    const name = $('f-name').value.trim().toLowerCase();
    const kind = $('f-kind').value;
    const state = $('f-state').value;
    return (!name || e.st.sink.toLowerCase().includes(name)) && (!kind || e.kind === kind) && (!state || e.state === state);
  }

  function refilter() {
    for (const e of sinks.values()) e.row.hidden = !matches(e);
    dirty.summary = true;
    render();
  }

  // Countdowns to the next retry move every second.
  function tick1(e, now) {
    let text = '';
    if (e.retryAt) {
      const s = Math.ceil((e.retryAt - now) / 1000);
      text = s > 0 ? 'in ' + fmtSeconds(s) : 'due';
    }
    setText(e.cells.retry, text);
  }

  function tickAll() {
    const now = Date.now();
    for (const e of retrying) tick1(e, now);
  }

  function render() {
    if (dirty.summary) renderSummary();
    if (dirty.gens) renderGens();
    if (dirty.rejections) renderRejections();
    dirty = { gens: false, rejections: false, summary: false };
    if (!firstRender && sinks.size > 0) {
      firstRender = true;
      // How long the first full table took from navigation (read by the
      // browser tests and shown to whoever looks).
      document.documentElement.dataset.firstRenderMs = String(Math.round(performance.now()));
    }
  }

  function renderSummary() {
    const g = gens.get(current.generation);
    setText($('gen'), current.generation ? String(current.generation) : 'none yet');
    setText($('hash'), current.hash || '');
    setText($('accepted'), g && g.acceptTime ? fmtTime(g.acceptTime) : '');
    const labels = $('labels');
    labels.replaceChildren(...labelNodes(g && g.labels));
    const parts = [];
    for (const s of STATES) if (counts.get(s)) parts.push(counts.get(s) + ' ' + s);
    setText($('summary'), sinks.size + ' sinks' + (parts.length ? ': ' + parts.join(', ') : ''));
    let shown = 0;
    for (const e of sinks.values()) if (!e.row.hidden) shown++;
    setText($('shown'), '(' + shown + ' of ' + sinks.size + ' shown)');
  }

  function labelNodes(labels) {
    const out = [];
    for (const [k, v] of Object.entries(labels || {}).sort()) {
      const s = document.createElement('span');
      s.className = 'label';
      s.textContent = k + '=' + v;
      out.push(s);
    }
    return out;
  }

  function renderGens() {
    const body = $('gens').tBodies[0];
    const rows = [];
    const list = [...gens.values()].sort((a, b) => Number(b.generation) - Number(a.generation)).slice(0, GENERATIONS_SHOWN);
    for (const g of list) {
      const tr = document.createElement('tr');
      tr.dataset.generation = g.generation;
      const applied = g.sinksApplied || 0, total = g.sinksTotal || 0;
      const out = outcome(g);
      const conv = out.text;
      const cells = [String(g.generation), (g.hash || '').slice(0, 12), g.acceptTime ? fmtTime(g.acceptTime) : '', conv];
      for (const c of cells) {
        const td = document.createElement('td');
        td.textContent = c;
        tr.append(td);
      }
      tr.children[1].className = 'hash';
      tr.children[3].className = out.cls;
      const btn = document.createElement('button');
      btn.type = 'button';
      btn.className = 'open-diff';
      btn.dataset.generation = g.generation;
      btn.textContent = 'diff';
      btn.title = 'what generation ' + g.generation + ' changed';
      tr.children[0].append(' ', btn);
      const td = document.createElement('td');
      const bar = document.createElement('span');
      bar.className = 'bar';
      const fill = document.createElement('i');
      fill.style.width = (total ? Math.round((100 * applied) / total) : 0) + '%';
      bar.append(fill);
      td.append(bar, applied + ' / ' + total);
      tr.append(td);
      const lt = document.createElement('td');
      lt.append(...labelNodes(g.labels));
      tr.append(lt);
      rows.push(tr);
    }
    body.replaceChildren(...rows);
  }

  // outcome says what became of a generation: converged (and how fast),
  // rejected by the sinks whose last rejected generation it is, or
  // converging.
  function outcome(g) {
    if (g.convergeTime && g.acceptTime) {
      return { text: 'in ' + fmtDuration((Date.parse(g.convergeTime) - Date.parse(g.acceptTime)) / 1000), cls: 'converged' };
    }
    let rejected = 0;
    for (const e of sinks.values()) if (String(e.st.rejectedGeneration || '') === String(g.generation)) rejected++;
    if (rejected > 0) return { text: 'rejected by ' + rejected + ' of ' + (g.sinksTotal || sinks.size), cls: 'rejected' };
    return { text: 'converging', cls: 'converging muted' };
  }

  // showDiff opens generation gen's diff against the one before it.
  async function showDiff(gen) {
    const sec = $('diff');
    sec.hidden = false;
    sec.dataset.generation = gen;
    setText($('diff-title'), 'generation ' + gen + ': what changed');
    const list = $('diff-changes');
    list.replaceChildren();
    let d;
    try {
      d = await (await api('api/v1/diff?' + new URLSearchParams({ stream, to: gen }))).json();
    } catch (e) {
      if (e instanceof AuthError) { showLogin(e.message); return; }
      const p = document.createElement('p');
      p.className = 'error';
      p.textContent = e.message;
      list.replaceChildren(p);
      return;
    }
    if (sec.dataset.generation !== String(gen)) return; // another one was opened meanwhile
    setText($('diff-title'), 'generation ' + (d.to || gen) + ' against ' + (d.from ? 'generation ' + d.from : 'nothing') +
      ': ' + (d.created || 0) + ' created, ' + (d.updated || 0) + ' updated, ' + (d.deleted || 0) + ' deleted');
    const verbs = { ENTITY_ACTION_CREATE: 'creating', ENTITY_ACTION_UPDATE: 'updating', ENTITY_ACTION_DELETE: 'deleting' };
    const rows = [];
    for (const c of d.changes || []) {
      const li = document.createElement('li');
      li.className = 'change';
      li.dataset.action = (c.action || '').replace('ENTITY_ACTION_', '').toLowerCase();
      let name = c.type + (c.name ? ' ' + c.name : (c.id ? ' ' + c.id : ''));
      if (c.parent) name += ' (' + c.parent + ')';
      const head = document.createElement('span');
      head.textContent = (verbs[c.action] || c.action) + ' ' + name;
      li.append(head);
      const obj = k8sObject(c.tags);
      if (obj) {
        const o = document.createElement('span');
        o.className = 'tags';
        o.textContent = ' ' + obj;
        li.append(o);
      }
      if (c.fields && c.fields.length) {
        const ul = document.createElement('ul');
        for (const f of c.fields) {
          const fi = document.createElement('li');
          fi.className = 'field mono';
          fi.textContent = (f.path || []).join('.') + ': ' + (f.oldJson || '(absent)') + ' \u2192 ' + (f.newJson || '(absent)');
          ul.append(fi);
        }
        li.append(ul);
      }
      rows.push(li);
    }
    if (rows.length === 0) {
      const li = document.createElement('li');
      li.className = 'muted';
      li.textContent = 'no entity changed';
      rows.push(li);
    }
    list.replaceChildren(...rows);
  }

  // k8sObject names the Kubernetes object an entity came from, by the
  // k8s-* tags Kong Ingress Controller puts on it.
  function k8sObject(tags) {
    const t = {};
    for (const tag of tags || []) {
      const i = tag.indexOf(':');
      if (i > 0) t[tag.slice(0, i)] = tag.slice(i + 1);
    }
    if (!t['k8s-kind'] && !t['k8s-name']) return '';
    const ns = t['k8s-namespace'] ? t['k8s-namespace'] + '/' : '';
    return (t['k8s-kind'] || 'object') + ' ' + ns + (t['k8s-name'] || '');
  }

  function renderRejections() {
    const groups = new Map(); // object -> Map(entity+errors -> {ee, sinks[]})
    for (const e of sinks.values()) {
      // Only a rejection of the generation the sink is asked for now:
      // the entity errors of an older one stay in its status until then.
      if (!e.st.rejectedGeneration || e.st.rejectedGeneration !== e.st.desiredGeneration) continue;
      for (const ee of e.st.entityErrors || []) {
        const obj = k8sObject(ee.entityTags) || 'no Kubernetes object (untagged entity)';
        if (!groups.has(obj)) groups.set(obj, new Map());
        const msgs = (ee.errors || []).map((f) => (f.field ? f.field + ': ' : '') + f.message);
        const key = ee.entityType + '\u0000' + (ee.entityName || ee.entityId || '') + '\u0000' + msgs.join('\u0000');
        const m = groups.get(obj);
        if (!m.has(key)) m.set(key, { ee, msgs, sinks: [], gen: e.st.rejectedGeneration || e.st.desiredGeneration });
        m.get(key).sinks.push(e.st.sink);
      }
      // A DEGRADED sink runs a fallback without these entities: the
      // rejected ones and what depends on them (docs/fallback.md).
      for (const x of e.st.excludedEntities || []) {
        const obj = k8sObject(x.entityTags) || 'no Kubernetes object (untagged entity)';
        if (!groups.has(obj)) groups.set(obj, new Map());
        const why = x.dependsOn ? 'excluded from the fallback: depends on ' + x.dependsOn
          : 'excluded from the fallback' + (x.message ? ': ' + x.message : '');
        const msgs = [why + (x.previousVersionKept ? ' (its previous version is kept)' : '')];
        const key = 'x\u0000' + x.entityType + '\u0000' + (x.entityName || x.entityId || '') + '\u0000' + msgs[0];
        const m = groups.get(obj);
        if (!m.has(key)) m.set(key, { ee: x, msgs, sinks: [], gen: e.st.fallbackGeneration || e.st.desiredGeneration, verb: 'excluded by' });
        m.get(key).sinks.push(e.st.sink);
      }
    }
    const out = [];
    for (const obj of [...groups.keys()].sort()) {
      const div = document.createElement('div');
      div.className = 'object';
      div.dataset.object = obj;
      const h = document.createElement('h3');
      h.textContent = obj;
      const ul = document.createElement('ul');
      for (const it of groups.get(obj).values()) {
        const li = document.createElement('li');
        const what = document.createElement('b');
        what.textContent = it.ee.entityType + ' ' + (it.ee.entityName || it.ee.entityId || '');
        const msg = document.createElement('span');
        msg.className = 'error';
        msg.textContent = ': ' + (it.msgs.join('; ') || 'rejected');
        const by = document.createElement('div');
        by.className = 'muted';
        by.textContent = 'generation ' + it.gen + ', ' + (it.verb || 'rejected by') + ' ' + it.sinks.sort().join(', ');
        const tags = document.createElement('div');
        tags.className = 'tags';
        tags.textContent = 'tags: ' + (it.ee.entityTags || []).join(' ');
        li.append(what, msg, by, tags);
        ul.append(li);
      }
      div.append(h, ul);
      out.push(div);
    }
    $('objects').replaceChildren(...out);
    $('rejections').hidden = out.length === 0;
  }

  // Formatting.
  function parseDuration(d) { return parseFloat(String(d).replace(/s$/, '')) || 0; }
  function fmtDuration(sec) {
    if (sec < 1) return Math.round(sec * 1000) + 'ms';
    if (sec < 60) return sec.toFixed(sec < 10 ? 2 : 1) + 's';
    return fmtSeconds(Math.round(sec));
  }
  function fmtSeconds(s) {
    if (s < 60) return s + 's';
    const m = Math.floor(s / 60);
    return m + 'm' + String(s % 60).padStart(2, '0') + 's';
  }
  function fmtTime(ts) {
    const d = new Date(ts);
    return isNaN(d) ? ts : d.toLocaleString(undefined, { hour12: false });
  }

  // Wiring.
  $('gens').tBodies[0].addEventListener('click', (ev) => {
    const b = ev.target.closest('button.open-diff');
    if (b) showDiff(b.dataset.generation);
  });
  $('diff-close').addEventListener('click', () => { $('diff').hidden = true; });
  for (const s of STATES) $('f-state').append(new Option(s, s));
  $('f-name').addEventListener('input', refilter);
  $('f-kind').addEventListener('change', refilter);
  $('f-state').addEventListener('change', refilter);
  $('stream').addEventListener('change', () => {
    stream = $('stream').value;
    history.replaceState(null, '', '#stream=' + encodeURIComponent(stream));
    reset();
    render();
    follow();
  });
  $('login').addEventListener('submit', (ev) => {
    ev.preventDefault();
    token = $('token').value;
    $('token').value = '';
    sessionStorage.setItem(TOKEN_KEY, token);
    start();
  });
  $('logout').addEventListener('click', () => {
    token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    reset();
    render();
    showLogin('');
  });
  setInterval(tickAll, 1000);
  start();
})();
