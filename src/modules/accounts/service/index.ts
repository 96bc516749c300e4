/**
 * The accounts services, one use case a file (issue 42): an account as a session may see it, its live
 * margin, its profile and balance views, a profile update, the next login; what they share (scoping, the
 * not-found refusals) is in shared.ts.
 */
export { loadAccountView, loadAccountViewAs } from './load-account'
export { levelType, liveMargin, marginIn, requireMargin } from './margin'
export { nextLogin } from './next-login'
export { type AccountView, accountNotFound, findScopedAccount, groupNotFound } from './shared'
export { type ProfileUpdate, updateProfile } from './update-profile'
export { balanceView, profileView } from './views'
