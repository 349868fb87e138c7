#!/usr/bin/env node
// The `vc` command: registers tsx so the TypeScript sources run as they are (nothing is compiled or committed).
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
