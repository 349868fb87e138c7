/** The helpers plugins share live in the plugin SDK (plugins/sdk); the core imports them from here. */
export { clone, copyFields, downMeta, isPublic, keepSuperOwned, newObject, routeToAllTenants, upMeta } from '../../plugins/sdk/src/helpers.ts';
