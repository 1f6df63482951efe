import { Type } from 'typebox';

/**
 * A body with nothing required. Variant A sends `service_id` on per-service operations;
 * unknown fields are ignored so that billing modules that send extras keep working.
 */
export const EmptyBody = Type.Object({ service_id: Type.Optional(Type.String({ maxLength: 64 })) });

export const ServiceParams = Type.Object({ service_id: Type.String({ maxLength: 64 }) });
export const ProductParams = Type.Object({ product_uuid: Type.String({ maxLength: 64 }) });

/** Path ids are UUIDs; anything else cannot name an object, so it is reported as not found. */
export { isUuid } from '../domain/ids.ts';
