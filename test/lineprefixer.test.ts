import { describe, expect, it } from 'vitest';
import { LinePrefixer } from './lineprefixer.ts';

describe('LinePrefixer', () => {
  const cases: Array<{ name: string; chunks: string[]; want: string }> = [
    { name: 'whole lines', chunks: ['a\nb\n'], want: '[x] a\n[x] b\n' },
    { name: 'a line split across pieces', chunks: ['ab', 'c\nd', 'e\n'], want: '[x] abc\n[x] de\n' },
    { name: 'an empty line keeps its prefix', chunks: ['a\n\nb\n'], want: '[x] a\n[x] \n[x] b\n' },
    { name: 'a last line without newline is ended', chunks: ['a\nb'], want: '[x] a\n[x] b\n' },
    { name: 'nothing', chunks: [], want: '' },
    { name: 'a piece without newline gives nothing until the end', chunks: ['a', 'b'], want: '[x] ab\n' },
  ];
  it.each(cases)('$name', ({ chunks, want }) => {
    const p = new LinePrefixer('[x] ');
    expect(chunks.map((c) => p.push(c)).join('') + p.end()).toBe(want);
  });

  it('returns nothing for a piece that completes no line', () => {
    const p = new LinePrefixer('[x] ');
    expect(p.push('abc')).toBe('');
    expect(p.push('\n')).toBe('[x] abc\n');
  });
});
