import { describe, expect, it } from 'vitest';
import { MessageSplitter } from './etcdsnapshot.ts';

describe('MessageSplitter', () => {
  const cases: Array<{ name: string; chunks: string[]; want: string[]; rest?: string }> = [
    { name: 'newline separated', chunks: ['{"a":1}\n{"b":2}\n'], want: ['{"a":1}', '{"b":2}'] },
    { name: 'back to back without a newline', chunks: ['{"a":1}{"b":{"c":2}}'], want: ['{"a":1}', '{"b":{"c":2}}'] },
    {
      name: 'an object cut across chunks',
      chunks: ['{"result":{"bl', 'ob":"QUJD"}}', '\n{"x":1}'],
      want: ['{"result":{"blob":"QUJD"}}', '{"x":1}'],
    },
    { name: 'braces and escaped quotes inside strings', chunks: ['{"m":"a}\\"{b"}'], want: ['{"m":"a}\\"{b"}'] },
    { name: 'a cut inside a string', chunks: ['{"m":"a}', '"}'], want: ['{"m":"a}"}'] },
    { name: 'an unfinished object stays as rest', chunks: ['{"a":1}{"b":'], want: ['{"a":1}'], rest: '{"b":' },
  ];
  for (const c of cases)
    it(c.name, () => {
      const s = new MessageSplitter();
      const got = c.chunks.flatMap((t) => s.push(t));
      expect(got).toEqual(c.want);
      expect(s.rest().trim()).toBe(c.rest ?? '');
    });
});
