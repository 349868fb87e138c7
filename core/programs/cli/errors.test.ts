import { describe, expect, it } from 'vitest';
import { ApiError } from '../../kube/errors.ts';
import { ConfigError } from '../manager/config.ts';
import { CliError, describeError, errorReport } from './errors.ts';

const NOT_FOUND_HINT =
  'not found: is vc installed on this cluster (`vc install`), and is the name and -n/--namespace right?';
const sys = (code: string, extra: Record<string, unknown>) =>
  Object.assign(new Error(`${code} ...`), { code, ...extra });

describe('describeError', () => {
  it.each([
    [
      new CliError('x.yaml: VirtualCluster default/a: spec.foo: unknown field'),
      'x.yaml: VirtualCluster default/a: spec.foo: unknown field',
    ],
    [
      new ApiError(403, 'Forbidden', 'GET /apis/x: 403 virtualclusters is forbidden\nmore'),
      'GET /apis/x: 403 virtualclusters is forbidden; the kubeconfig user lacks RBAC for this: ask for a Role, or use another --context',
    ],
    [
      new ApiError(404, 'NotFound', 'GET /apis/x: 404 the server could not find the requested resource'),
      `GET /apis/x: 404 the server could not find the requested resource; ${NOT_FOUND_HINT}`,
    ],
    [new ApiError(409, 'AlreadyExists', 'POST /x: 409 exists'), 'POST /x: 409 exists'],
    [
      new TypeError('fetch failed', { cause: sys('ECONNREFUSED', { address: '127.0.0.1', port: 6443 }) }),
      'cannot reach 127.0.0.1:6443 (ECONNREFUSED): if it is the cluster, check --kubeconfig and --context (`vc --help` says which kubeconfig is used)',
    ],
    [
      sys('ENOTFOUND', { hostname: 'api.example' }),
      'cannot reach api.example (ENOTFOUND): if it is the cluster, check --kubeconfig and --context (`vc --help` says which kubeconfig is used)',
    ],
    [
      new Error('request failed', { cause: sys('SELF_SIGNED_CERT_IN_CHAIN', {}) }),
      "TLS: SELF_SIGNED_CERT_IN_CHAIN ... (SELF_SIGNED_CERT_IN_CHAIN): the server's certificate is not signed by a CA " +
        'this command trusts; if it is the cluster, check --kubeconfig and --context (`vc --help` says which kubeconfig is used)',
    ],
    [sys('ENOENT', { path: '/x/y.yaml' }), '/x/y.yaml: no such file or directory'],
    [sys('EACCES', { path: '/etc/shadow' }), '/etc/shadow: permission denied'],
    [new ConfigError('m.yaml: superClusters[0].name: required'), 'm.yaml: superClusters[0].name: required'],
    [
      new TypeError("Cannot read properties of undefined (reading 'x')\n  at f"),
      "Cannot read properties of undefined (reading 'x') (run with -v for details)",
    ],
    ['a string', 'a string (run with -v for details)'],
  ])('%s', (e, want) => {
    expect(describeError(e)).toBe(want);
  });
});

describe('errorReport', () => {
  it('is one line per problem, each starting vc:', () => {
    expect(errorReport(new CliError('a.yaml: spec.x: bad\na.yaml: spec.y: bad'), false)).toBe(
      'vc: a.yaml: spec.x: bad\nvc: a.yaml: spec.y: bad\n',
    );
  });

  it('with -v adds the stack and every cause, and the apiserver answer', () => {
    const cause = new ApiError(500, 'InternalError', 'GET /x: 500 boom', { kind: 'Status', code: 500 });
    const text = errorReport(new Error('reading tenants', { cause }), true);
    const lines = text.split('\n');
    expect(lines[0]).toBe('vc: reading tenants');
    expect(text).toMatch(/\nError: reading tenants\n\s+at /);
    expect(text).toMatch(/\ncaused by: ApiError: GET \/x: 500 boom\n\s+at /);
    expect(text).toContain('\nresponse: {"kind":"Status","code":500}\n');
  });
});
