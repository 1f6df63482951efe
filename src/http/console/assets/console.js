// The operator console's only script (docs/console.md). Pages work without it; it adds:
// - times in the operator's own zone: every <time data-local datetime="ISO"> is rewritten;
// - live regions: an element with data-live="SECONDS" is fetched again every SECONDS while the page
//   is visible, and replaced by the same element of the fresh page; it stops when the fresh page's
//   element no longer has data-live (nothing left to wait for);
// - confirmations: a form with data-confirm="question" asks before it is sent.

const zoneFormat = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
});

function localTimes(root) {
  for (const el of root.querySelectorAll('time[data-local]')) {
    const when = new Date(el.getAttribute('datetime'));
    if (!Number.isNaN(when.getTime())) {
      el.title = el.getAttribute('datetime');
      el.textContent = zoneFormat.format(when);
    }
  }
}

function watch(el) {
  const seconds = Math.max(1, Number(el.dataset.live) || 2);
  const id = el.id;
  if (!id) return;
  setTimeout(async () => {
    if (document.visibilityState !== 'visible') return watch(el);
    try {
      const answer = await fetch(location.href, {
        headers: { 'x-console-live': '1' },
        credentials: 'same-origin',
      });
      if (!answer.ok || answer.redirected) return;
      const fresh = new DOMParser().parseFromString(await answer.text(), 'text/html').getElementById(id);
      const current = document.getElementById(id);
      if (!fresh || !current) return;
      // Keep the keyboard where it was when the region is replaced under it.
      const focused = current.contains(document.activeElement) ? document.activeElement?.id : undefined;
      current.replaceWith(fresh);
      localTimes(fresh);
      if (focused) document.getElementById(focused)?.focus();
      if (fresh.dataset.live) watch(fresh);
    } catch {
      watch(el);
    }
  }, seconds * 1000);
}

document.addEventListener('submit', (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) event.preventDefault();
});

localTimes(document);
for (const el of document.querySelectorAll('[data-live]')) watch(el);
