// Validators and serializers compiled on first use instead of at start-up. Compiling every route's
// schemas eagerly (AJV for requests, fast-json-stringify for each response status) took most of the
// service's start time, and a restart is time with connections refused. After `listen`,
// `warmCompilers` compiles the rest in the background, one per event-loop turn, so the first real
// request of a route rarely pays for it.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifySchemaCompiler, FastifyServerOptions } from 'fastify';

type Compile = () => void;

export interface LazyCompilers {
  validatorCompiler: FastifySchemaCompiler<unknown>;
  compilersFactory: NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
  /** Compiles what is still pending, one schema per event-loop turn; resolves when done or stopped. */
  warm(signal?: AbortSignal): Promise<void>;
}

/** One app's compilers: `compile` is the eager validator compiler they defer. */
export function lazyCompilers(compile: FastifySchemaCompiler<unknown>): LazyCompilers {
  const pending = new Set<Compile>();
  /** A function that compiles on its first call, and is also queued for warming. */
  function deferred<F>(make: () => F): () => F {
    let compiled: F | undefined;
    const ensure = () => {
      compiled ??= make();
      pending.delete(ensure);
      return compiled;
    };
    pending.add(ensure);
    return ensure;
  }

  const validatorCompiler: FastifySchemaCompiler<unknown> = (route) => {
    const ensure = deferred(() => compile(route) as ((data: unknown) => unknown) & { errors?: unknown });
    const validate = (data: unknown) => {
      const fn = ensure();
      const result = fn(data);
      // Fastify reads the errors from the function it was given.
      (validate as { errors?: unknown }).errors = fn.errors;
      return result;
    };
    return validate as ReturnType<FastifySchemaCompiler<unknown>>;
  };

  // Error bodies are built by one function (`envelope`) and are small: plain JSON.stringify serves
  // them all, instead of one fast-json-stringify function per route and error status. Success
  // bodies keep their schema serializer (it also drops any field the schema does not declare).
  const compilersFactory = {
    buildSerializer(externalSchemas: unknown, serializerOptions: unknown) {
      const factory = (
        SerializerSelector() as unknown as (
          external: unknown,
          options: unknown,
        ) => (route: { httpStatus?: string }) => (data: unknown) => string
      )(externalSchemas, serializerOptions);
      return (route: { httpStatus?: string }) => {
        if (Number(route.httpStatus) >= 400) return (data: unknown) => JSON.stringify(data);
        const ensure = deferred(() => factory(route));
        return (data: unknown) => ensure()(data);
      };
    },
  } as unknown as LazyCompilers['compilersFactory'];

  function warm(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const step = () => {
        const next = pending.values().next();
        if (next.done || signal?.aborted) return resolve();
        next.value();
        setImmediate(step);
      };
      setImmediate(step);
    });
  }

  return { validatorCompiler, compilersFactory, warm };
}
