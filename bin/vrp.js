#!/usr/bin/env node
// The `vrp` command (npx vrp ...). The project's own Node 24 runs it under npx/npm.
await import('../src/cli/main.ts');
