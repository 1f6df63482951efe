import { Type } from 'typebox';
import { BodyServiceId, Nullable } from './common.ts';

/** The reverse DNS of one of a service's addresses. */
export const AddressPtrPayload = Type.Object(
  {
    ip: Type.String({ description: 'One of the service’s addresses (IPv4, or its IPv6 address)' }),
    ptr: Nullable(Type.String(), {
      description:
        'The host name its PTR record points to: the one set, else the provider’s default, else null (no record)',
    }),
  },
  { title: 'AddressPtr' },
);

export const ReverseDnsPayload = Type.Array(AddressPtrPayload);

export const SetPtrBody = Type.Object({
  service_id: BodyServiceId,
  // Any string: one that is not one of the service's addresses is 400 `ip_not_of_service`.
  ip: Type.String({
    description: 'One of the service’s addresses (400 `ip_not_of_service` otherwise)',
  }),
  // Any string: its length is checked with the rest by checkPtr (400 `invalid_ptr`), not here
  // (the body limit bounds it).
  ptr: Nullable(Type.String(), {
    description:
      'A host name (RFC 1123, as an order’s `domain_name`; 400 `invalid_ptr` otherwise); null: back to the provider’s default (which may be no record)',
  }),
});
