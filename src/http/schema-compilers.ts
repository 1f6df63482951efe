import { AjvCompiler } from '@fastify/ajv-compiler';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>;
type Factory = (externalSchemas: unknown, options: unknown) => (route: { schema: unknown }) => unknown;

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
  buildValidator: cached(AjvCompiler() as Factory) as CompilersFactory['buildValidator'],
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
