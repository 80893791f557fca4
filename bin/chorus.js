#!/usr/bin/env node
// The `chorus` command. Runs the TypeScript sources through tsx (no build step to go stale).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
