/**
 * The container image (Containerfile), built and tested by `scripts/image.sh test`: its
 * configuration (a user other than root, the HEALTHCHECK on /readyz, the data volume, the
 * command, Node 24), then the image started with a fresh volume, healthy by its own HEALTHCHECK,
 * the README's whole walk-through against it (the operator's commands run inside the image), a
 * SIGTERM it exits 0 on, and the store left in the volume. How it is started here, and why not
 * with podman, the script says (docs/deploy.md, "The container image").
 *
 * Its own image name, so that a developer's `scripts/image.sh build` is left alone. The first
 * run on a machine makes the base image from Debian's packages (about two minutes); later runs
 * reuse it and the build's cached layers.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { SERVER_NODE_FLAGS, SERVER_PROGRAM } from '../helpers/server-process.ts';
import { IN_CI, missingTool, toolPath } from '../helpers/tools.ts';

const root = resolve(import.meta.dirname, '..', '..');

/** `text` as a regular expression that matches it literally. */
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

function skipReason(): string | false {
  const missing = missingTool('buildah');
  if (missing) return missing;
  if (!IN_CI && process.getuid?.() !== 0)
    return 'scripts/image.sh needs root (debootstrap, chroot isolation)';
  return false;
}

/** Runs the script; its exit code and everything it printed. */
function image(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn('bash', ['scripts/image.sh', ...args], {
      cwd: root,
      // A variable given as undefined is left out.
      env: Object.fromEntries(
        Object.entries({ ...process.env, VRP_IMAGE: 'localhost/vrp-provider:test', ...env }).filter(
          (e): e is [string, string] => e[1] !== undefined,
        ),
      ),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => {
      out += String(c);
    });
    child.stderr.on('data', (c) => {
      out += String(c);
    });
    child.on('close', (code) => done({ code, out }));
  });
}

describe('the container image', { skip: skipReason() }, () => {
  test('a wrong verb is refused with the usage', async () => {
    const r = await image(['publish']);
    assert.equal(r.code, 2);
    assert.match(r.out, /usage: scripts\/image\.sh base\|build\|test/);
  });

  test('`base` makes the base image once: a second call finds it made', {
    timeout: 10 * 60_000,
  }, async () => {
    const first = await image(['base']);
    assert.equal(first.code, 0, first.out);
    const again = await image(['base']);
    assert.equal(again.code, 0, again.out);
    assert.match(again.out, /image: base localhost\/vrp-node-base:[^ ]+: already made/);
    assert.doesNotMatch(again.out, /debootstrap/);
    // With the project's Node first on PATH (node_modules/.bin, as in a shell that has it there)
    // and none of the settings an outer npm passes its scripts, npm runs under that Node. The npm
    // put in the base is still the one on PATH: the same base, found made (`npm root -g` had
    // answered node_modules/node/lib/node_modules, where there is none).
    const bin = join(root, 'node_modules', '.bin');
    const outerNpm = Object.keys(process.env).filter((k) => /^npm_/i.test(k));
    const projectNodeFirst = await image(['base'], {
      ...Object.fromEntries(outerNpm.map((k) => [k, undefined])),
      PATH: `${bin}:${process.env['PATH'] ?? ''}`,
    });
    assert.equal(projectNodeFirst.code, 0, projectNodeFirst.out);
    const made = /image: base (\S+): already made/.exec(again.out)?.[1];
    assert.ok(made, again.out);
    assert.match(projectNodeFirst.out, new RegExp(`image: base ${literally(made)}: already made`));
    // An npm on PATH with no npm package behind it: refused, saying where it looked, nothing made.
    const fake = mkdtempSync(join(tmpdir(), 'vrp-image-npm-'));
    try {
      mkdirSync(join(fake, 'bin'));
      writeFileSync(join(fake, 'bin', 'npm'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      const noNpm = await image(['base'], { PATH: `${join(fake, 'bin')}:${process.env['PATH'] ?? ''}` });
      assert.equal(noNpm.code, 1, noNpm.out);
      assert.match(
        noNpm.out,
        new RegExp(`image: no npm at ${literally(fake)} \\(from ${literally(join(fake, 'bin', 'npm'))}\\)`),
      );
      assert.doesNotMatch(noNpm.out, /debootstrap|already made/);
    } finally {
      rmSync(fake, { recursive: true, force: true });
    }
    // A base named by VRP_NODE_IMAGE is taken as given: nothing is made.
    const given = await image(['base'], { VRP_NODE_IMAGE: 'localhost/vrp-some-base:1' });
    assert.equal(given.code, 0, given.out);
    assert.match(given.out, /image: base localhost\/vrp-some-base:1: given \(VRP_NODE_IMAGE\)/);
    assert.doesNotMatch(given.out, /debootstrap|already made/);
  });

  test('a base image that cannot be had fails the build, saying so', { timeout: 5 * 60_000 }, async () => {
    const child = await image(['build'], {
      VRP_IMAGE: 'localhost/vrp-provider:test-broken',
      VRP_NODE_IMAGE: 'localhost/vrp-no-such-base:0',
    });
    assert.equal(child.code, 1, child.out);
    assert.match(child.out, /image: the build failed/);
    assert.doesNotMatch(child.out, /image: built /);
  });

  test('a walk-through that fails fails the test, and the server it started is ended', {
    timeout: 10 * 60_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vrp-image-'));
    try {
      const failing = join(dir, 'failing-walkthrough.ts');
      writeFileSync(
        failing,
        "process.stderr.write('step 1 (test): refused on purpose\\n');\nprocess.exit(1);\n",
      );
      const r = await image(['test'], { VRP_IMAGE_WALKTHROUGH: failing });
      assert.equal(r.code, 1, r.out);
      assert.match(r.out, /refused on purpose/);
      assert.match(r.out, /image: the walk-through failed against the image/);
      assert.doesNotMatch(r.out, /image: test passed/);
      const port = /listening on 127\.0\.0\.1:(\d+)/.exec(r.out)?.[1];
      assert.ok(port, r.out);
      await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'nothing answers on its port');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Minutes, not the suite's default 5: a first run makes the base image and installs packages.
  const long = { timeout: 25 * 60_000 };
  test(
    'scripts/image.sh test: built, configured, healthy, walked through, stopped cleanly',
    long,
    async () => {
      assert.ok(toolPath('buildah'));
      const r = await image(['test']);
      assert.equal(r.code, 0, r.out);
      const lines = r.out.split('\n');
      const has = (re: RegExp) =>
        assert.ok(
          lines.some((l) => re.test(l)),
          `${re} in:\n${r.out}`,
        );
      has(
        new RegExp(
          `^image: configuration: user "vrp", volume /var/lib/vrp-provider, port 8080, command ${literally(JSON.stringify(['node', ...SERVER_NODE_FLAGS, SERVER_PROGRAM]))}`,
        ),
      );
      has(/^image: node in the image: v24\./);
      has(
        new RegExp(
          `^image: started: ${literally(['node', ...SERVER_NODE_FLAGS, SERVER_PROGRAM].join(' '))} as uid 10001, listening on 127\\.0\\.0\\.1:\\d+`,
        ),
      );
      has(/^image: healthy \(its own HEALTHCHECK, node bin\/healthcheck\.js\)/);
      // Every step of the README's walk-through, the last one the server's end.
      for (const step of [
        'vrp reseller create acme',
        'create-order',
        'rescue, unrescue',
        'console link',
        'terminate',
      ])
        has(new RegExp(`^ok \\d+ ${step.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
      has(/^walk-through: all \d+ steps answered as the README says$/);
      has(/^image: stopped by SIGTERM: exit 0/);
      has(/^image: the store is in the volume, owned by uid 10001$/);
      has(/^image: test passed$/);
    },
  );
});
