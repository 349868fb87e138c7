import https from 'node:https';
import { Kubeconfig } from '../../kube/kubeconfigfile.ts';

/**
 * probeReadyz sends GET /readyz to the server of a kubeconfig with its credentials and returns true on 200, or a
 * short reason (DNS failure, refused, timeout, status code).
 */
export async function probeReadyz(kubeconfig: string, timeoutMs: number): Promise<true | string> {
  const kc = new Kubeconfig();
  kc.loadFromString(kubeconfig);
  const cluster = kc.getCurrentCluster();
  if (!cluster) return 'kubeconfig has no current cluster';
  const tls: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  const url = new URL('/readyz', cluster.server);
  return new Promise((resolve) => {
    const req = https.get(
      url,
      { ca: tls.ca, cert: tls.cert, key: tls.key, headers: tls.headers, agent: false },
      (res) => {
        res.resume();
        clearTimeout(timer);
        resolve(res.statusCode === 200 ? true : `HTTP ${res.statusCode}`);
      },
    );
    // One deadline for DNS, connect, TLS and the answer.
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(e.code ? `${e.code} ${url.hostname}` : e.message);
    });
  });
}
