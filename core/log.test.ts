import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { childLogger, defaultLogLevel, log, setDefaultLogLevel } from './log.ts';

const here = fileURLToPath(new URL('./log.ts', import.meta.url));

describe('setDefaultLogLevel', () => {
  let saved: { env: string | undefined; level: string };
  beforeEach(() => {
    saved = { env: process.env.LOG_LEVEL, level: log.level };
    delete process.env.LOG_LEVEL;
    log.level = 'info';
  });
  afterEach(() => {
    if (saved.env === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = saved.env;
    log.level = saved.level;
  });

  it('quiets children made before it (a module-level logger) and later ones, and passes the level on', () => {
    const early = childLogger({ controller: 'made-at-import' });
    const grandchild = early.child({ tenant: 't1' });
    expect(early.isLevelEnabled('info')).toBe(true);
    setDefaultLogLevel('warn');
    const late = childLogger({ controller: 'made-after' });
    for (const l of [early, grandchild, late]) {
      expect(l.isLevelEnabled('info')).toBe(false);
      expect(l.isLevelEnabled('warn')).toBe(true);
    }
    expect(process.env.LOG_LEVEL).toBe('warn');
  });

  it('leaves the level LOG_LEVEL chose', () => {
    process.env.LOG_LEVEL = 'info';
    const early = childLogger({ controller: 'made-at-import' });
    setDefaultLogLevel('warn');
    expect(early.isLevelEnabled('info')).toBe(true);
    expect(process.env.LOG_LEVEL).toBe('info');
  });
});

describe('log output', () => {
  it('writes the level by name in JSON, and info by default outside tests', () => {
    const env = { ...process.env };
    delete env.LOG_LEVEL;
    delete env.VC_DEFAULT_LOG_LEVEL;
    const out = execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `const { log } = await import(${JSON.stringify(here)}); log.info({ k: 1 }, 'hello'); log.debug('hidden');`,
      ],
      { env, encoding: 'utf8' },
    );
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', msg: 'hello', k: 1 });
  });

  it('takes its default level from VC_DEFAULT_LOG_LEVEL, and LOG_LEVEL over it', () => {
    expect(defaultLogLevel({})).toBe('info');
    expect(defaultLogLevel({ VC_DEFAULT_LOG_LEVEL: 'warn' })).toBe('warn');
    expect(defaultLogLevel({ VC_DEFAULT_LOG_LEVEL: 'warn', LOG_LEVEL: 'debug' })).toBe('debug');
  });
});
