import type { KubeObject } from '@virtualcluster-ts/plugin-sdk';

/** hasSelector reports whether a Service selects Pods (an empty selector selects none, like no selector). */
export function hasSelector(service: KubeObject | undefined): boolean {
  const selector = (service as { spec?: { selector?: Record<string, string> } } | undefined)?.spec?.selector;
  return Object.keys(selector ?? {}).length > 0;
}
