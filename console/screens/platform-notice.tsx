// What the platform key can and cannot read, shown on the screens it signs in to (admin, audit).

export function PlatformNotice() {
  return (
    <p class="notice">
      Signed in with the platform key: it administers tenants, keys, limit rules and rates, and reads a tenant's
      statement and payments. It cannot read a tenant's events, beneficiaries or treasury (the API answers it 403
      scope_missing); sign in with that tenant's own key for those screens.
    </p>
  );
}
