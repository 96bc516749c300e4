import type { UseCase } from '../../kernel/use-case'
import { type AccountSettings, changeAccountSettings } from './admin'
import type { AccountsCtx } from './context'
import { type OpenAccountInput, openAccount } from './open'
import { loadAccountView } from './service/load-account'
import { requireMargin } from './service/margin'
import type { SessionScope } from './service/shared'
import { profileView } from './service/views'

// beside admin.ts and open.ts, not in service/: they reach service/ (a cycle)

/** An account of the brand as staff read it: its profile with the live margin, and its owner. */
export async function managedAccount({
  ctx,
  brand,
  session,
  login,
}: UseCase<AccountsCtx, undefined, SessionScope & { login: number }>) {
  const view = await loadAccountView({ ctx, brand, session, login })
  return {
    ...profileView(view, await requireMargin({ ctx, input: view })),
    customer_id: view.account.customerId,
  }
}

type StaffOpen = Omit<OpenAccountInput, 'brandId' | 'customerId' | 'createdBy'> & { customer_id?: number }

/** A staff member opens an account of the brand (owned by one of its customers, or by none). */
export async function openManagedAccount({
  ctx,
  brand,
  session,
  input,
}: UseCase<AccountsCtx, StaffOpen, SessionScope>) {
  const { customer_id, ...fields } = input
  const { account } = await openAccount(ctx, {
    ...fields,
    brandId: brand.id,
    customerId: customer_id ?? null,
    createdBy: `staff:${session.staffId}`,
  })
  return managedAccount({ ctx, brand, session, login: account.login })
}

/** A staff member changes an account's group, leverage or flags; answers it as changed. */
export async function changeManagedAccount({
  ctx,
  brand,
  session,
  login,
  input,
}: UseCase<AccountsCtx, AccountSettings, SessionScope & { login: number }>) {
  await changeAccountSettings(ctx, brand, login, input)
  return managedAccount({ ctx, brand, session, login })
}
