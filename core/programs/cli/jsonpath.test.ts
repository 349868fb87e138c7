import { describe, expect, it } from 'vitest';
import { jsonPath } from './jsonpath.ts';

// The expected texts are what kubectl 1.36 prints for the same template on the same Pod
// (`kubectl label --local -f pod.yaml z=3 -o jsonpath=...`).
const pod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { labels: { z: '3' }, name: 'p' },
  spec: {
    containers: [
      { image: 'ia', name: 'a', ports: [{ containerPort: 80 }, { containerPort: 443 }] },
      { image: 'ib', name: 'b' },
      { image: 'ic', name: 'c' },
    ],
  },
};

describe('jsonPath', () => {
  it.each([
    ['{.metadata.name}', 'p'],
    ['plain', 'plain'],
    ['{.spec.containers[*].name}', 'a b c'],
    ['{range .spec.containers[*]}<{.name}>{end}', '<a><b><c>'],
    ['{range .spec.containers}<{.name}>{end}', '<>'],
    ['{range .spec.containers[*]}{.name}', 'abc'],
    ['{.spec.containers[0:2].name}', 'a b'],
    ['{.spec.containers[-1:].name}', 'c'],
    ['{.spec.containers[-1].name}', 'c'],
    ['{.spec.containers[0:3:2].name}', 'a c'],
    ['{.spec.containers[?(@.name=="b")].image}', 'ib'],
    ['{.spec.containers[?(@.name!="b")].name}', 'a c'],
    ['{.spec.containers[?(@.name<"b")].name}', 'a'],
    ['{.spec.containers[?(@.ports)].name}', 'a'],
    ['{.spec.containers[?(@.ports[0].containerPort>50)].name}', 'a'],
    ['{..containerPort}', '80 443'],
    ['{.spec.containers[*].ports[*].containerPort}', '80 443'],
    ["{.metadata['name','labels']}", 'p {"z":"3"}'],
    ['{.spec.containers[0].ports}', '[{"containerPort":80},{"containerPort":443}]'],
    ['{.metadata.name}{"\\t"}{"a\\"b"}', 'p\ta"b'],
    ["{.metadata.name}{'\\n'}", 'p\n'],
    ['{.nope} {$.kind}', ' Pod'],
    ['{range .spec.containers[*]}{.name}={$.metadata.name}{"\\n"}{end}', 'a=p\nb=p\nc=p\n'],
  ])('%s', (template, want) => {
    expect(jsonPath(template, pod)).toBe(want);
  });

  it('prints objects as compact JSON with sorted keys', () => {
    expect(jsonPath('{.x}', { x: { b: 1, a: [true, null] } })).toBe('{"a":[true,null],"b":1}');
  });

  it('reads keys with dots when escaped', () => {
    expect(jsonPath('{.l.app\\.kubernetes\\.io/name}', { l: { 'app.kubernetes.io/name': 'vc' } })).toBe('vc');
  });

  it.each([
    ['x{.metadata.name', /unclosed action at column 2/],
    ['{end}', /\{end\} at column 1 is not in a \{range\}/],
    ['{.spec.containers[}', /unclosed action at column 1/],
    ['{.spec.containers[5].name}', /array index out of bounds: index 5, length 3/],
    ['{.spec.containers[*]["name"]}', /invalid array index "\\"name\\""/],
    ['{.spec.containers[?(@.name==b)]}', /invalid filter operand "b"/],
    ['{spec}', /unexpected "s" at column 1/],
  ])('refuses %s', (template, error) => {
    expect(() => jsonPath(template, pod)).toThrow(error);
  });
});
