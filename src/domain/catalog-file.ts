import { RESOURCE_UNITS, RESOURCES, type Resource } from './catalog.ts';
import { isUuid } from './ids.ts';
import { isStorableText, unstorableTextMessage } from './storable-text.ts';
import { MAX_THROTTLE_MBIT, parseTrafficOver } from './traffic.ts';

/** The catalogue file (`vrp catalog import|export`), documented in docs/catalog.md. */
export interface CatalogFile {
  readonly os_templates: readonly { id: string; name: string; image?: string | null; retired?: boolean }[];
  readonly products: readonly {
    id: string;
    name: string;
    template: string;
    config: Readonly<Record<Resource, { min: number; max: number }>>;
    os_templates: readonly string[];
    plans: readonly {
      id: string;
      name: string;
      cpu: number;
      ram: number;
      hdd: number;
      price: number;
      retired?: boolean;
    }[];
    /** Monthly traffic quota per service, GB (10^9 bytes, in and out together); absent or null: none. */
    traffic_gb?: number | null;
    /** Past the quota: `throttle:MBIT` or `suspend`; given exactly when `traffic_gb` is. */
    traffic_over?: string | null;
    /** No longer offered to resellers; its services keep working. Absent: offered. */
    retired?: boolean;
  }[];
}

/** The largest amount a column holds on every store (PostgreSQL `integer`). */
export const MAX_AMOUNT = 2147483647;
const MAX_NAME = 200;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Every problem of a file, each naming the exact path (`products[1].config.cpu.max must be >= min`). */
export class CatalogFileError extends Error {
  override name = 'CatalogFileError';
  readonly problems: readonly string[];
  constructor(problems: string[]) {
    super(`the catalogue file is not valid:\n- ${problems.join('\n- ')}`);
    this.problems = problems;
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Validates and normalises a parsed catalogue file (bounds may be numeric strings, ids any case). */
export function parseCatalogFile(input: unknown): CatalogFile {
  const problems: string[] = [];
  const str = (v: unknown, path: string, maxLength = MAX_NAME): string => {
    if (typeof v !== 'string' || v.trim() === '') problems.push(`${path} must be a non-empty string`);
    else if (v.trim().length > maxLength) problems.push(`${path} must be at most ${maxLength} characters`);
    else if (CONTROL.test(v.trim())) problems.push(`${path} must not contain control characters`);
    // A lone surrogate would be stored as U+FFFD, a silent change (U+0000 is a control character).
    else if (!isStorableText(v)) problems.push(unstorableTextMessage(path));
    return typeof v === 'string' ? v.trim() : '';
  };
  // A misspelt key ("plan") would otherwise be dropped without a word.
  const known = (o: Obj, path: string, keys: readonly string[]) => {
    for (const k of Object.keys(o)) {
      if (!keys.includes(k)) problems.push(`${path ? `${path}.` : ''}${k} is not a known field`);
    }
  };
  const id = (v: unknown, path: string): string => {
    if (typeof v !== 'string' || !isUuid(v)) problems.push(`${path} must be a UUID`);
    return typeof v === 'string' ? v.toLowerCase() : '';
  };
  // NaN for a bad value: every comparison with it is false, so one mistake is reported once.
  const int = (v: unknown, path: string, min: number): number => {
    const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min) {
      problems.push(`${path} must be a whole number >= ${min}`);
      return Number.NaN;
    }
    if (n > MAX_AMOUNT) {
      problems.push(`${path} must be at most ${MAX_AMOUNT}`);
      return Number.NaN;
    }
    return n;
  };
  // Written only when true (`{ retired: true }`), so a catalogue without retirements reads as before.
  const retired = (o: Obj, path: string): { retired?: true } => {
    const v = o['retired'];
    if (v !== undefined && typeof v !== 'boolean') problems.push(`${path}.retired must be true or false`);
    return v === true ? { retired: true } : {};
  };
  const bounds = (b: unknown, path: string, r: Resource): { min: number; max: number } => {
    if (!isObj(b)) {
      problems.push(`${path} must be an object with min and max`);
      return { min: Number.NaN, max: Number.NaN };
    }
    // `unit` is allowed so a product copied from the API reads back; units are fixed.
    known(b, path, ['min', 'max', 'unit']);
    if (b['unit'] !== undefined && b['unit'] !== RESOURCE_UNITS[r]) {
      problems.push(`${path}.unit must be "${RESOURCE_UNITS[r]}" (units are fixed)`);
    }
    const floor = r === 'backup' ? 0 : 1;
    const min = int(b['min'], `${path}.min`, floor);
    const max = int(b['max'], `${path}.max`, floor);
    if (max < min) {
      problems.push(`${path}.max must be >= min`);
      return { min: Number.NaN, max: Number.NaN };
    }
    return { min, max };
  };
  if (!isObj(input)) throw new CatalogFileError(['the file must hold a JSON object']);
  known(input, '', ['os_templates', 'products']);
  const rawTemplates = Array.isArray(input['os_templates']) ? input['os_templates'] : [];
  if (!Array.isArray(input['os_templates'])) problems.push('os_templates must be an array');
  const rawProducts = Array.isArray(input['products']) ? input['products'] : [];
  if (!Array.isArray(input['products'])) problems.push('products must be an array');

  const templates = rawTemplates.map((t, i) => {
    const path = `os_templates[${i}]`;
    if (!isObj(t)) {
      problems.push(`${path} must be an object`);
      return { id: '', name: '', image: null };
    }
    known(t, path, ['id', 'name', 'image', 'retired']);
    const tid = id(t['id'], `${path}.id`);
    const name = str(t['name'], `${path}.name`);
    const image =
      t['image'] === undefined || t['image'] === null ? null : str(t['image'], `${path}.image`, 4096);
    return { id: tid, name, image, ...retired(t, path) };
  });
  const templateIds = new Set<string>();
  templates.forEach((t, i) => {
    if (t.id && templateIds.has(t.id)) problems.push(`os_templates[${i}].id repeats ${t.id}`);
    templateIds.add(t.id);
  });

  // Ids are unique across templates, products and plans, so an id names one thing in a file.
  const seen = new Set<string>(templateIds);
  const products = rawProducts.map((p, i) => {
    const path = `products[${i}]`;
    if (!isObj(p)) {
      problems.push(`${path} must be an object`);
      return undefined;
    }
    known(p, path, [
      'id',
      'name',
      'template',
      'config',
      'os_templates',
      'plans',
      'traffic_gb',
      'traffic_over',
      'retired',
    ]);
    const pid = id(p['id'], `${path}.id`);
    if (pid && seen.has(pid)) problems.push(`${path}.id repeats ${pid}`);
    seen.add(pid);
    const name = str(p['name'], `${path}.name`);
    const template = str(p['template'], `${path}.template`);
    const rawConfig = p['config'];
    if (!isObj(rawConfig)) problems.push(`${path}.config must be an object with ${RESOURCES.join(', ')}`);
    else known(rawConfig, `${path}.config`, RESOURCES);
    // In the order of RESOURCES, as the problems are listed.
    const boundsOf = (r: Resource) =>
      isObj(rawConfig)
        ? bounds(rawConfig[r], `${path}.config.${r}`, r)
        : { min: Number.NaN, max: Number.NaN };
    const config: Record<Resource, { min: number; max: number }> = {
      ram: boundsOf('ram'),
      ip: boundsOf('ip'),
      cpu: boundsOf('cpu'),
      hdd: boundsOf('hdd'),
      backup: boundsOf('backup'),
    };
    const rawOs = Array.isArray(p['os_templates']) ? p['os_templates'] : [];
    if (!Array.isArray(p['os_templates']) || rawOs.length === 0) {
      problems.push(`${path}.os_templates must be a non-empty array of template ids`);
    }
    const osTemplates = rawOs.map((t, j) => {
      const tid = id(t, `${path}.os_templates[${j}]`);
      if (tid && !templateIds.has(tid))
        problems.push(`${path}.os_templates[${j}] names no template in os_templates`);
      return tid;
    });
    if (new Set(osTemplates).size !== osTemplates.length)
      problems.push(`${path}.os_templates repeats a template`);
    const rawPlans = Array.isArray(p['plans']) ? p['plans'] : [];
    if (p['plans'] !== undefined && !Array.isArray(p['plans']))
      problems.push(`${path}.plans must be an array`);
    const plans = rawPlans.map((pl, j) => {
      const ppath = `${path}.plans[${j}]`;
      if (!isObj(pl)) {
        problems.push(`${ppath} must be an object`);
        return { id: '', name: '', cpu: Number.NaN, ram: Number.NaN, hdd: Number.NaN, price: 0 };
      }
      known(pl, ppath, ['id', 'name', 'cpu', 'ram', 'hdd', 'price', 'retired']);
      const plan = {
        id: id(pl['id'], `${ppath}.id`),
        name: str(pl['name'], `${ppath}.name`),
        cpu: int(pl['cpu'], `${ppath}.cpu`, 1),
        ram: int(pl['ram'], `${ppath}.ram`, 1),
        hdd: int(pl['hdd'], `${ppath}.hdd`, 1),
        price:
          typeof pl['price'] === 'number' && Number.isFinite(pl['price']) && pl['price'] >= 0
            ? pl['price']
            : Number.NaN,
      };
      if (Number.isNaN(plan.price)) problems.push(`${ppath}.price must be a number >= 0`);
      for (const r of ['cpu', 'ram', 'hdd'] as const) {
        if (plan[r] < config[r].min || plan[r] > config[r].max) {
          problems.push(
            `${ppath}.${r} must lie within the product's ${r} bounds ${config[r].min}..${config[r].max}`,
          );
        }
      }
      if (plan.id && seen.has(plan.id)) problems.push(`${ppath}.id repeats ${plan.id}`);
      seen.add(plan.id);
      return { ...plan, ...retired(pl, ppath) };
    });
    const quota =
      p['traffic_gb'] === undefined || p['traffic_gb'] === null
        ? null
        : int(p['traffic_gb'], `${path}.traffic_gb`, 1);
    const rawOver = p['traffic_over'] === undefined ? null : p['traffic_over'];
    const over = typeof rawOver === 'string' ? rawOver : null;
    if (rawOver !== null && (over === null || !parseTrafficOver(over)))
      problems.push(
        `${path}.traffic_over must be "throttle:MBIT" (MBIT 1..${MAX_THROTTLE_MBIT}) or "suspend"`,
      );
    else if (quota !== null && rawOver === null)
      problems.push(
        `${path}.traffic_over must say what happens past traffic_gb: "throttle:MBIT" or "suspend"`,
      );
    else if (quota === null && rawOver !== null) problems.push(`${path}.traffic_over needs traffic_gb`);
    return {
      id: pid,
      name,
      template,
      config,
      os_templates: osTemplates,
      plans,
      ...(quota !== null && over !== null ? { traffic_gb: quota, traffic_over: over } : {}),
      ...retired(p, path),
    };
  });
  if (problems.length > 0) throw new CatalogFileError(problems);
  return { os_templates: templates, products: products.filter((p) => p !== undefined) };
}
