import { Type } from 'typebox';

/** A one-time link to a service's console in the browser. */
export const ConsoleLinkPayload = Type.Object({
  url: Type.String({
    format: 'uri',
    description:
      'Open it in a browser within 60 seconds; it opens once. The page shows the serial console (and the graphical one where the server has it).',
  }),
  expires_at: Type.String({ format: 'date-time', description: 'The link no longer opens after this time' }),
});
