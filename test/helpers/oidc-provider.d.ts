// oidc-provider ships no types; the tests use the few members they need untyped.
declare module 'oidc-provider' {
  const Provider: any;
  export default Provider;
}
