import { RESOURCES, type Resource } from './catalog.ts';

/** The catalogue file (`vrp catalog import|export`), documented in docs/catalog.md. */
export interface CatalogFile {
  readonly os_templates: readonly { id: string; name: string; image?: string | null }[];
  readonly products: readonly {
    id: string;
    name: string;
    template: string;
    config: Readonly<Record<Resource, { min: number; max: number }>>;
    os_templates: readonly string[];
    plans: readonly { id: string; name: string; cpu: number; ram: number; hdd: number; price: number }[];
  }[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
  const str = (v: unknown, path: string): string => {
    if (typeof v !== 'string' || v.trim() === '') problems.push(`${path} must be a non-empty string`);
    return typeof v === 'string' ? v.trim() : '';
  };
  const id = (v: unknown, path: string): string => {
    if (typeof v !== 'string' || !UUID.test(v)) problems.push(`${path} must be a UUID`);
    return typeof v === 'string' ? v.toLowerCase() : '';
  };
  const int = (v: unknown, path: string, min: number): number => {
    const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min) {
      problems.push(`${path} must be a whole number >= ${min}`);
      return min;
    }
    return n;
  };
  if (!isObj(input)) throw new CatalogFileError(['the file must hold a JSON object']);
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
    const image = t['image'] === undefined || t['image'] === null ? null : str(t['image'], `${path}.image`);
    return { id: id(t['id'], `${path}.id`), name: str(t['name'], `${path}.name`), image };
  });
  const templateIds = new Set<string>();
  templates.forEach((t, i) => {
    if (t.id && templateIds.has(t.id)) problems.push(`os_templates[${i}].id repeats ${t.id}`);
    templateIds.add(t.id);
  });

  const seen = new Set<string>();
  const products = rawProducts.map((p, i) => {
    const path = `products[${i}]`;
    if (!isObj(p)) {
      problems.push(`${path} must be an object`);
      return undefined;
    }
    const pid = id(p['id'], `${path}.id`);
    if (pid && seen.has(pid)) problems.push(`${path}.id repeats ${pid}`);
    seen.add(pid);
    const rawConfig = isObj(p['config']) ? p['config'] : {};
    if (!isObj(p['config'])) problems.push(`${path}.config must be an object`);
    const config = {} as Record<Resource, { min: number; max: number }>;
    for (const r of RESOURCES) {
      const b = rawConfig[r];
      const bpath = `${path}.config.${r}`;
      if (!isObj(b)) {
        problems.push(`${bpath} must be an object with min and max`);
        config[r] = { min: 0, max: 0 };
        continue;
      }
      const floor = r === 'backup' ? 0 : 1;
      const min = int(b['min'], `${bpath}.min`, floor);
      const max = int(b['max'], `${bpath}.max`, floor);
      if (max < min) problems.push(`${bpath}.max must be >= min`);
      config[r] = { min, max };
    }
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
        return { id: '', name: '', cpu: 0, ram: 0, hdd: 0, price: 0 };
      }
      const plan = {
        id: id(pl['id'], `${ppath}.id`),
        name: str(pl['name'], `${ppath}.name`),
        cpu: int(pl['cpu'], `${ppath}.cpu`, 1),
        ram: int(pl['ram'], `${ppath}.ram`, 1),
        hdd: int(pl['hdd'], `${ppath}.hdd`, 1),
        price: typeof pl['price'] === 'number' && pl['price'] >= 0 ? pl['price'] : Number.NaN,
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
      return plan;
    });
    return {
      id: pid,
      name: str(p['name'], `${path}.name`),
      template: str(p['template'], `${path}.template`),
      config,
      os_templates: osTemplates,
      plans,
    };
  });
  if (problems.length > 0) throw new CatalogFileError(problems);
  return { os_templates: templates, products: products.filter((p) => p !== undefined) };
}
