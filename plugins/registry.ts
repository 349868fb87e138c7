import type { Plugin } from '@virtualcluster-ts/plugin-sdk';
import configmaps from './configmaps/index.ts';
import customresourcedefinitions from './customresourcedefinitions/index.ts';
import dns from './dns/index.ts';
import dnsview from './dns/view.ts';
import endpoints from './endpoints/index.ts';
import { endpointslicesPlugin as endpointslices } from './endpoints/slices.ts';
import events from './events/index.ts';
import ingresses from './ingresses/index.ts';
import namespaces from './namespaces/index.ts';
import networkpolicies from './networkpolicies/index.ts';
import nodes from './nodes/index.ts';
import persistentvolumeclaims from './persistentvolumeclaims/index.ts';
import persistentvolumes from './persistentvolumes/index.ts';
import pods from './pods/index.ts';
import priorityclasses from './priorityclasses/index.ts';
import runtimeclasses from './runtimeclasses/index.ts';
import secrets from './secrets/index.ts';
import serviceaccounts from './serviceaccounts/index.ts';
import services from './services/index.ts';
import storageclasses from './storageclasses/index.ts';

/**
 * builtinPlugins lists every built-in plugin. Opt-in ones (ingresses, priorityclasses, customresourcedefinitions)
 * declare `optIn` in their manifest and run only where enabled.
 */
export const builtinPlugins: Plugin[] = [
  namespaces,
  configmaps,
  secrets,
  serviceaccounts,
  services,
  endpoints,
  endpointslices,
  networkpolicies,
  persistentvolumeclaims,
  persistentvolumes,
  storageclasses,
  ...runtimeclasses,
  pods,
  dns,
  dnsview,
  nodes,
  events,
  ingresses,
  priorityclasses,
  customresourcedefinitions,
] as Plugin[];
