/** KeyMove is one key a re-key writes: its old and new name. */
export interface KeyMove {
  from: string;
  to: string;
}

/**
 * movedKey gives the name a key gets when everything under fromPrefix moves under toPrefix, or undefined for a key
 * outside fromPrefix (left where it is). Prefixes are directory-like: `/a` covers `/a/x`, never `/ab/x`.
 */
export function movedKey(key: string, fromPrefix: string, toPrefix: string): string | undefined {
  const from = fromPrefix.endsWith('/') ? fromPrefix : `${fromPrefix}/`;
  const to = toPrefix.endsWith('/') ? toPrefix : `${toPrefix}/`;
  return key.startsWith(from) ? to + key.slice(from.length) : undefined;
}

interface RangeAnswer {
  kvs?: Array<{ key: string; value?: string }>;
  more?: boolean;
}

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

async function gateway(endpoint: string, path: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${endpoint}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok) throw new Error(`etcd ${path} on ${endpoint}: ${res.status} ${await res.text()}`);
  return res.json();
}

/**
 * rekeyEtcd moves every key under fromPrefix to the same name under toPrefix in the etcd at endpoint, through the v3
 * JSON gateway, a page at a time (64 keys: a put and a delete each, within etcd's default --max-txn-ops of 128); each
 * page's puts and deletes are one transaction. It is for an etcd nobody else uses yet (a data directory restored for
 * another tenant: an apiserver reads its objects under its own --etcd-prefix, and nothing in a stored object names
 * the prefix). It returns how many keys moved.
 */
export async function rekeyEtcd(endpoint: string, fromPrefix: string, toPrefix: string, page = 64): Promise<number> {
  if (!fromPrefix.startsWith('/') || !toPrefix.startsWith('/') || fromPrefix.length < 2 || toPrefix.length < 2)
    throw new Error(`re-keying etcd: prefixes must be absolute and not /: ${fromPrefix} -> ${toPrefix}`);
  const p = fromPrefix.endsWith('/') ? fromPrefix : `${fromPrefix}/`;
  const end = p.slice(0, -1) + String.fromCharCode(p.charCodeAt(p.length - 1) + 1);
  let moved = 0;
  for (;;) {
    // Each page moves its keys out of the range, so the next read starts at the range's beginning again.
    const r = (await gateway(endpoint, '/v3/kv/range', {
      key: b64(p),
      range_end: b64(end),
      limit: page,
    })) as RangeAnswer;
    const kvs = r.kvs ?? [];
    if (kvs.length === 0) return moved;
    const success = kvs.flatMap((kv) => {
      const key = Buffer.from(kv.key, 'base64').toString('latin1');
      const to = movedKey(key, fromPrefix, toPrefix)!;
      return [
        { request_put: { key: b64(Buffer.from(to, 'latin1')), value: kv.value ?? '' } },
        { request_delete_range: { key: kv.key } },
      ];
    });
    await gateway(endpoint, '/v3/kv/txn', { success });
    moved += kvs.length;
  }
}
