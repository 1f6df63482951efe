import type { Static } from 'typebox';
import { RESOURCE_UNITS, RESOURCES } from '../../../domain/catalog.ts';
import { CONSOLE } from '../../base-path.ts';
import type {
  CatalogPlanPayload,
  CatalogProductPayload,
  CatalogTemplatePayload,
} from '../../schemas/operator.ts';
import { badge, table } from '../components.ts';
import { type ConsoleCall, type ConsoleRouter, csrfField } from '../console-router.ts';
import { backOf, buttonForm, pathParam } from '../forms.ts';
import { type Html, html } from '../html.ts';

type Product = Static<typeof CatalogProductPayload>;
type Plan = Static<typeof CatalogPlanPayload>;
type Template = Static<typeof CatalogTemplatePayload>;

const PAGE = `${CONSOLE}/catalog`;
const KINDS = { products: 'product', plans: 'plan', 'os-templates': 'OS template' } as const;
type Kind = keyof typeof KINDS;
const KIND_LIST: readonly Kind[] = ['products', 'plans', 'os-templates'];

/**
 * A number as the form gives it: empty is absent, digits go as a number, anything else as it was
 * typed, so the operator API refuses it with the catalogue file's own message (the console holds
 * no rule of its own).
 */
function numberOf(text: string | undefined): number | string | undefined {
  const value = (text ?? '').trim();
  if (value === '') return undefined;
  return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
}
const textOf = (text: string | undefined) => (text ?? '').trim();

/** Retire or offer again, and remove, for one item. */
function itemButtons(
  call: ConsoleCall,
  kind: Kind,
  id: string,
  name: string,
  retired: boolean,
  back: string,
) {
  const base = `${PAGE}/${kind}/${encodeURIComponent(id)}`;
  return html`${buttonForm({
    csrf: call.csrf,
    action: `${base}/${retired ? 'unretire' : 'retire'}`,
    label: retired ? 'Offer again' : 'Retire',
    name: `${retired ? 'Offer again' : 'Retire'} ${KINDS[kind]} ${name}`,
    kind: 'secondary',
    back,
  })}${buttonForm({
    csrf: call.csrf,
    action: `${base}/delete`,
    label: 'Remove',
    name: `Remove ${KINDS[kind]} ${name}`,
    kind: 'danger',
    confirm: `Remove ${KINDS[kind]} ${name}? Only what no service uses can be removed; retire it otherwise.`,
    back,
  })}`;
}

/** The fields of a product form, filled with `p` when changing one. */
function productFields(prefix: string, templates: readonly Template[], p?: Product): Html {
  const bounds = RESOURCES.map(
    (r) => html`<div class="field"><span>${r} (${RESOURCE_UNITS[r]})</span>
<label for="${prefix}-${r}-min">min</label><input id="${prefix}-${r}-min" name="${r}_min" inputmode="numeric" required value="${p ? String(p.config[r]?.min ?? '') : ''}">
<label for="${prefix}-${r}-max">max</label><input id="${prefix}-${r}-max" name="${r}_max" inputmode="numeric" required value="${p ? String(p.config[r]?.max ?? '') : ''}"></div>`,
  );
  const offered = templates.map(
    (t) =>
      html`<label><input type="checkbox" name="os_template" value="${t.id}"${p?.os_templates.includes(t.id) ? html` checked` : ''}> ${t.name}${t.retired ? ' (retired)' : ''}</label>`,
  );
  return html`<label for="${prefix}-name">Name</label>
<input id="${prefix}-name" name="name" required maxlength="200" value="${p?.name ?? ''}" autocomplete="off">
<label for="${prefix}-template">Template kind (as resellers see it, e.g. kvm)</label>
<input id="${prefix}-template" name="template" required maxlength="200" value="${p?.template ?? 'kvm'}" autocomplete="off">
<fieldset><legend>Bounds of each amount</legend><div class="quota-fields">${bounds}</div></fieldset>
<fieldset><legend>OS templates offered</legend>${offered}</fieldset>
<label for="${prefix}-traffic">Monthly traffic quota per server, GB (empty: none)</label>
<input id="${prefix}-traffic" name="traffic_gb" inputmode="numeric" value="${p?.traffic_gb ?? ''}">
<label for="${prefix}-over">Past the quota: throttle:MBIT or suspend (with a quota)</label>
<input id="${prefix}-over" name="traffic_over" value="${p?.traffic_over ?? ''}" autocomplete="off">`;
}

/** The product a product form describes, in the catalogue file's shape. */
function productBody(call: ConsoleCall, multi: readonly string[]) {
  const traffic = numberOf(call.field('traffic_gb'));
  const over = textOf(call.field('traffic_over'));
  return {
    name: textOf(call.field('name')),
    template: textOf(call.field('template')),
    config: Object.fromEntries(
      RESOURCES.map((r) => [
        r,
        { min: numberOf(call.field(`${r}_min`)), max: numberOf(call.field(`${r}_max`)) },
      ]),
    ),
    os_templates: multi,
    traffic_gb: traffic ?? null,
    traffic_over: over === '' ? null : over,
  };
}

function planFields(prefix: string, p?: Plan): Html {
  return html`<label for="${prefix}-name">Name</label><input id="${prefix}-name" name="name" required maxlength="200" value="${p?.name ?? ''}" autocomplete="off">
<label for="${prefix}-cpu">CPU (vCores)</label><input id="${prefix}-cpu" name="cpu" inputmode="numeric" required value="${p?.cpu ?? ''}">
<label for="${prefix}-ram">RAM (GB)</label><input id="${prefix}-ram" name="ram" inputmode="numeric" required value="${p?.ram ?? ''}">
<label for="${prefix}-hdd">Disk (GB)</label><input id="${prefix}-hdd" name="hdd" inputmode="numeric" required value="${p?.hdd ?? ''}">
<label for="${prefix}-price">Price</label><input id="${prefix}-price" name="price" inputmode="decimal" required value="${p?.price ?? ''}">`;
}

const planBody = (call: ConsoleCall) => ({
  name: textOf(call.field('name')),
  cpu: numberOf(call.field('cpu')),
  ram: numberOf(call.field('ram')),
  hdd: numberOf(call.field('hdd')),
  price: numberOf(call.field('price')),
});

function productSection(call: ConsoleCall, p: Product, templates: readonly Template[]): Html {
  const manage = call.can('manage');
  const back = `${PAGE}#product-${p.id}`;
  const names = new Map(templates.map((t) => [t.id, t.name]));
  const bounds = RESOURCES.map(
    (r) => `${r} ${p.config[r]?.min ?? '?'}–${p.config[r]?.max ?? '?'} ${RESOURCE_UNITS[r]}`,
  ).join(', ');
  const plans = p.plans.map(
    (
      pl,
    ) => html`<tr id="plan-${pl.id}"><th scope="row">${pl.name}</th><td>${pl.cpu}</td><td>${pl.ram}</td><td>${pl.hdd}</td><td>${pl.price}</td>
<td>${badge(pl.retired ? 'retired' : 'offered')}</td>
<td>${
      manage
        ? html`${itemButtons(call, 'plans', pl.id, pl.name, pl.retired, back)}<details><summary>Change plan ${pl.name}</summary>
<form method="post" action="${PAGE}/plans/${pl.id}" class="stack">${csrfField(call.csrf)}${planFields(`plan-${pl.id}`, pl)}<div><button type="submit">Save plan</button></div></form></details>`
        : ''
    }</td></tr>`,
  );
  return html`<section id="product-${p.id}" aria-labelledby="product-${p.id}-h" class="card">
<h2 id="product-${p.id}-h">${p.name} ${badge(p.retired ? 'retired' : 'offered')}</h2>
<dl class="facts">
  <dt>Product id</dt><dd class="mono">${p.id}</dd>
  <dt>Kind</dt><dd>${p.template}</dd>
  <dt>Bounds</dt><dd>${bounds}</dd>
  <dt>OS templates</dt><dd>${p.os_templates.map((id) => names.get(id) ?? id).join(', ')}</dd>
  <dt>Traffic</dt><dd>${p.traffic_gb === null ? 'no quota' : `${p.traffic_gb} GB a month, then ${p.traffic_over ?? ''}`}</dd>
  <dt>Servers</dt><dd>${p.services}</dd>
</dl>
${manage ? html`<div class="actions">${itemButtons(call, 'products', p.id, p.name, p.retired, back)}</div>` : ''}
${table(`Plans of ${p.name}`, ['Plan', 'CPU', 'RAM', 'Disk', 'Price', 'State', ''], plans, 'No plans.')}
${
  manage
    ? html`<details><summary>Change product ${p.name}</summary>
<form method="post" action="${PAGE}/products/${p.id}" class="stack">${csrfField(call.csrf)}${productFields(`product-${p.id}`, templates, p)}<div><button type="submit">Save product</button></div></form></details>
<details><summary>Add a plan to ${p.name}</summary>
<form method="post" action="${PAGE}/products/${p.id}/plans" class="stack">${csrfField(call.csrf)}${planFields(`new-plan-${p.id}`)}<div><button type="submit">Add plan</button></div></form></details>`
    : ''
}
</section>`;
}

/**
 * `CONSOLE/catalog`: products with their plans, OS templates, the retired ones marked; for admins,
 * forms to add, change, retire and remove them. Every rule is the operator API's (the catalogue
 * file's): a refusal comes back as its message.
 */
export function registerCatalogPage(router: ConsoleRouter): void {
  router.page('/catalog', async (call) => {
    const [products, templates] = [
      await call.ops.get<Product[]>('products'),
      await call.ops.get<Template[]>('os-templates'),
    ];
    const manage = call.can('manage');
    const templateRows = templates.map(
      (
        t,
      ) => html`<tr id="template-${t.id}"><th scope="row">${t.name}</th><td class="mono">${t.image ?? ''}</td>
<td>${badge(t.retired ? 'retired' : 'offered')}</td><td>${t.products.length}</td><td>${t.services}</td>
<td>${manage ? itemButtons(call, 'os-templates', t.id, t.name, t.retired, `${PAGE}#template-${t.id}`) : ''}</td></tr>`,
    );
    const body = html`
<p class="hint">What resellers can order. A retired item is no longer offered (not listed, not orderable); the servers made from it keep working. Only what no server uses can be removed. Running servers show a change within 5 seconds.</p>
${products.map((p) => productSection(call, p, templates))}
${
  manage
    ? html`<section aria-labelledby="add-product-h"><h2 id="add-product-h">Add a product</h2>
<form method="post" action="${PAGE}/products" class="stack">${csrfField(call.csrf)}${productFields('new-product', templates)}<div><button type="submit">Add product</button></div></form></section>`
    : ''
}
<section aria-labelledby="templates-h"><h2 id="templates-h">OS templates</h2>
${table('OS templates', ['Name', 'Image', 'State', 'Products', 'Servers', ''], templateRows, 'No OS templates.')}
${
  manage
    ? html`<details><summary>Add an OS template</summary>
<form method="post" action="${PAGE}/os-templates" class="stack">${csrfField(call.csrf)}
<label for="new-template-name">Name</label><input id="new-template-name" name="name" required maxlength="200" autocomplete="off">
<label for="new-template-image">Image path (libvirt; empty: none)</label><input id="new-template-image" name="image" maxlength="4096" autocomplete="off">
<div><button type="submit">Add OS template</button></div></form></details>`
    : ''
}
</section>`;
    return call.render({ title: 'Catalogue', section: 'catalog', body });
  });

  const multi = (call: ConsoleCall): string[] => {
    const raw = call.request.body;
    const value =
      typeof raw === 'object' && raw !== null && 'os_template' in raw ? raw.os_template : undefined;
    if (typeof value === 'string') return [value];
    return Array.isArray(value) ? value.filter((v) => typeof v === 'string') : [];
  };

  router.action('/catalog/products', async (call) => {
    const { data } = await call.ops.send<Product>('POST', 'products', productBody(call, multi(call)));
    return {
      redirect: `${PAGE}#product-${data.id}`,
      flash: { kind: 'ok', text: `Product ${data.name} added.` },
    };
  });
  router.action('/catalog/products/:id', async (call) => {
    const id = pathParam(call, 'id');
    const { data } = await call.ops.send<Product>('PATCH', `products/${id}`, productBody(call, multi(call)));
    return {
      redirect: `${PAGE}#product-${data.id}`,
      flash: { kind: 'ok', text: `Product ${data.name} saved.` },
    };
  });
  router.action('/catalog/products/:id/plans', async (call) => {
    const id = pathParam(call, 'id');
    const { data } = await call.ops.send<Plan>('POST', `products/${id}/plans`, planBody(call));
    return { redirect: `${PAGE}#plan-${data.id}`, flash: { kind: 'ok', text: `Plan ${data.name} added.` } };
  });
  router.action('/catalog/plans/:id', async (call) => {
    const id = pathParam(call, 'id');
    const { data } = await call.ops.send<Plan>('PATCH', `plans/${id}`, planBody(call));
    return { redirect: `${PAGE}#plan-${data.id}`, flash: { kind: 'ok', text: `Plan ${data.name} saved.` } };
  });
  router.action('/catalog/os-templates', async (call) => {
    const image = textOf(call.field('image'));
    const { data } = await call.ops.send<Template>('POST', 'os-templates', {
      name: textOf(call.field('name')),
      image: image === '' ? null : image,
    });
    return {
      redirect: `${PAGE}#template-${data.id}`,
      flash: { kind: 'ok', text: `OS template ${data.name} added.` },
    };
  });
  for (const kind of KIND_LIST) {
    for (const verb of ['retire', 'unretire', 'delete'] as const) {
      router.action(`/catalog/${kind}/:id/${verb}`, async (call) => {
        const id = pathParam(call, 'id');
        await call.ops.send('POST', `${kind}/${id}/${verb}`);
        const done = verb === 'retire' ? 'retired' : verb === 'unretire' ? 'offered again' : 'removed';
        const name = KINDS[kind];
        const text = `${name.charAt(0).toUpperCase()}${name.slice(1)} ${done}.`;
        return { redirect: verb === 'delete' ? PAGE : backOf(call, PAGE), flash: { kind: 'ok', text } };
      });
    }
  }
}
