// Members of a parsed-JSON stand-in: own data properties as JSON.parse makes them, or ones decoded on first read.

import type { JsonObject } from './json-rpc.js';

/** An own data property as JSON.parse makes it ("__proto__" included); a later duplicate replaces it. */
export function setMember(object: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
}

/** A member computed the first time it is read, then an ordinary data property; a write before that replaces it. */
export function defineOpenedOnRead(object: JsonObject, key: string, open: () => unknown): void {
  Object.defineProperty(object, key, {
    get() {
      const value = open();
      setMember(object, key, value);
      return value;
    },
    set(value: unknown) {
      setMember(object, key, value);
    },
    enumerable: true,
    configurable: true,
  });
}
