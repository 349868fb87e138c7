import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { childLogger, log, setDefaultLogLevel } from './log.ts';

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
