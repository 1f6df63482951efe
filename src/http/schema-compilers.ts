import { AjvCompiler } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>;
type Factory = (
  externalSchemas: unknown,
  options: unknown,
) => (route: { schema: unknown; httpPart?: string }) => unknown;

/**
 * Fastify's own schema compilers (ajv for requests, fast-json-stringify for answers), behind a
 * cache that every app of the process shares, keyed by the compiler's options and the schema's
 * JSON text. A server builds one app, and the cache changes nothing for it; the test suite builds
 * hundreds, and compiling ~200 schemas again for each was half of the cost of building one.
 * The key is the text, not the schema object, because routes build many of their schemas as they
 * register: the text is the same each time, the objects are new. What the text leaves out
 * (TypeBox's symbols) neither compiler reads. A compiled function is pure, or (ajv's `errors`)
 * read synchronously right after its call, so apps share one as safely as the routes of one app
 * already do.
 */
export const sharedSchemaCompilers: CompilersFactory = {
  buildValidator: coercingQueries(cached(AjvCompiler() as Factory)) as CompilersFactory['buildValidator'],
  buildSerializer: cached(SerializerSelector() as Factory) as CompilersFactory['buildSerializer'],
};

/** `factory` with each function it compiles remembered, in a cache of its own. */
function cached(factory: Factory): Factory {
  const compiled = new Map<string, unknown>();
  return (externalSchemas, options) => {
    const compile = factory(externalSchemas, options);
    const prefix = JSON.stringify([externalSchemas, options]);
    return (route) => {
      const key = `${prefix}${JSON.stringify(route.schema)}`;
      let fn = compiled.get(key);
      if (fn === undefined) {
        fn = compile(route);
        compiled.set(key, fn);
      }
      return fn;
    };
  };
}

/** The app's ajv options with type coercion on: a query parameter's text read as the integer its schema says. */
function withCoercion(options: unknown): unknown {
  if (typeof options !== 'object' || options === null) return options;
  const custom =
    'customOptions' in options && typeof options.customOptions === 'object' ? options.customOptions : {};
  return { ...options, customOptions: { ...custom, coerceTypes: true } };
}

/**
 * Query strings are text: their validator coerces (`limit=5` is the integer 5 that the schema,
 * and so the OpenAPI document, says), while bodies, which JSON types already, are never coerced
 * (`"cpu":"4"` stays a string, and is refused).
 */
function coercingQueries(factory: Factory): Factory {
  return (externalSchemas, options) => {
    const strict = factory(externalSchemas, options);
    const coercing = factory(externalSchemas, withCoercion(options));
    return (route) => (route.httpPart === 'querystring' ? coercing(route) : strict(route));
  };
}
