import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(crypto);

/**
 * x509 is @peculiar/x509, loaded only after the reflect-metadata polyfill its dependency tsyringe needs and set to Node's WebCrypto.
 * Import it from here, never from '@peculiar/x509' directly: a module that does so first fails to load.
 */
export { x509 };
