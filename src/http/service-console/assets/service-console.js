// The console page: the serial console in xterm.js and, where the server has one, its screen in
// noVNC, each over a WebSocket to this server (the session's cookie goes with it).
import { FitAddon } from './addon-fit.mjs';
import { Terminal } from './xterm.mjs';

const body = document.body;
const wsBase = `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}${body.dataset.ws}`;
const status = document.getElementById('status');
const say = (text) => {
  status.textContent = text;
};
const ended = (event) =>
  event.reason ? `Disconnected: ${event.reason}` : 'Disconnected. Ask for a new console link to reconnect.';

function openSerial(pane) {
  const term = new Terminal({ cursorBlink: true, scrollback: 5000 });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(pane);
  fit.fit();
  addEventListener('resize', () => fit.fit());
  const ws = new WebSocket(`${wsBase}/serial`);
  ws.binaryType = 'arraybuffer';
  const encoder = new TextEncoder();
  ws.addEventListener('open', () => {
    say(`Connected. The session ends at ${new Date(body.dataset.sessionUntil).toLocaleTimeString()}.`);
    term.focus();
  });
  ws.addEventListener('message', (event) => term.write(new Uint8Array(event.data)));
  ws.addEventListener('close', (event) => say(ended(event)));
  term.onData((data) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(encoder.encode(data));
  });
  term.onBinary((data) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(Uint8Array.from(data, (c) => c.charCodeAt(0)));
  });
  return {
    show() {
      fit.fit();
      term.focus();
    },
  };
}

async function openScreen(pane) {
  const { default: RFB } = await import('./novnc/core/rfb.js');
  const rfb = new RFB(pane, `${wsBase}/vnc`);
  rfb.scaleViewport = true;
  rfb.addEventListener('connect', () => say('Screen connected.'));
  rfb.addEventListener('disconnect', () =>
    say('Screen disconnected. Ask for a new console link to reconnect.'),
  );
  return { show: () => rfb.focus() };
}

const opened = new Map();
async function show(kind) {
  for (const tab of document.querySelectorAll('[role=tab]')) {
    const selected = tab.dataset.kind === kind;
    tab.setAttribute('aria-selected', String(selected));
    document.getElementById(`pane-${tab.dataset.kind}`).hidden = !selected;
  }
  const pane = document.getElementById(`pane-${kind}`);
  if (!opened.has(kind))
    opened.set(kind, kind === 'vnc' ? openScreen(pane) : Promise.resolve(openSerial(pane)));
  (await opened.get(kind)).show();
}

for (const tab of document.querySelectorAll('[role=tab]'))
  tab.addEventListener('click', () => show(tab.dataset.kind));
const first = document.querySelector('[role=tab]');
if (first) show(first.dataset.kind);
