/**
 * The PowerDNS client when a reverse zone is missing: it creates the zone and sends its change
 * again, and a zone that another request created in between (409, or 422 "already exists" as
 * older PowerDNS said) is as good as its own. Any other refusal of the creation is the error,
 * with PowerDNS' reason and never the API key. A stand-in of PowerDNS' API on loopback plays
 * each answer; the client is the product's.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createPowerDns } from '../../src/drivers/reverse-dns/powerdns.ts';
import { ReverseDnsError } from '../../src/drivers/reverse-dns/ptr-backend.ts';

const KEY = 'the-secret-api-key';
const change = { zone: '2.0.192.in-addr.arpa.', name: '5.2.0.192.in-addr.arpa.', ptr: 'mail.example.com' };

describe('PowerDNS client: a missing zone and the races around its creation', () => {
  /** How the stand-in answers the zone's creation, and what it was asked. */
  let creation: { status: number; body: string };
  let seen: string[] = [];
  let zoneExists = false;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      seen.push(`${req.method} ${req.url}`);
      if (req.method === 'PATCH') {
        res.writeHead(zoneExists ? 204 : 404, { 'content-type': 'application/json' });
        res.end(zoneExists ? '' : JSON.stringify({ error: 'Could not find domain' }));
        return;
      }
      if (creation.status < 300 || creation.status === 409 || /already exists/.test(creation.body))
        zoneExists = true;
      res.writeHead(creation.status, { 'content-type': 'application/json' });
      res.end(creation.body);
    });
  });
  let apiUrl = '';
  before(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  const client = () =>
    createPowerDns({ apiUrl, apiKey: KEY, serverId: 'localhost', nameservers: [], ttl: 3600 });
  const fresh = (status: number, body: string) => {
    creation = { status, body };
    seen = [];
    zoneExists = false;
  };

  test('a zone created by another request meanwhile (409, or 422 already exists) is used', async () => {
    for (const [status, body] of [
      [201, '{}'],
      [409, JSON.stringify({ error: 'Conflict' })],
      [422, JSON.stringify({ error: 'Domain 2.0.192.in-addr.arpa. already exists' })],
    ] as const) {
      fresh(status, body);
      await client().apply([change]);
      assert.deepEqual(seen, [
        'PATCH /api/v1/servers/localhost/zones/2.0.192.in-addr.arpa.',
        'POST /api/v1/servers/localhost/zones',
        'PATCH /api/v1/servers/localhost/zones/2.0.192.in-addr.arpa.',
      ]);
    }
  });

  test('removing a record of a zone that does not exist is done already: no zone is created', async () => {
    fresh(201, '{}');
    await client().apply([{ ...change, ptr: null }]);
    assert.deepEqual(seen, ['PATCH /api/v1/servers/localhost/zones/2.0.192.in-addr.arpa.']);
  });

  test('any other refusal of the creation is the error, with its reason and without the key', async () => {
    for (const [status, body, reason] of [
      [422, JSON.stringify({ error: 'Invalid zone name' }), /answered 422: Invalid zone name/],
      [500, 'internal trouble', /answered 500: internal trouble/],
    ] as const) {
      fresh(status, body);
      const err = await client()
        .apply([change])
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(err instanceof ReverseDnsError, String(err));
      assert.match(err.message, /POST \/zones \(2\.0\.192\.in-addr\.arpa\.\)/);
      assert.match(err.message, reason);
      assert.doesNotMatch(err.message, new RegExp(KEY));
    }
  });
});
