/** Answers of the demo brand's `personal` KYC step that pass every check (tests change one field at a time). */
export const PERSONAL_ANSWERS = {
  first_name: 'Ada',
  last_name: 'Lovelace',
  date_of_birth: '1990-12-10',
  nationality: 'GB',
  address_line: '1 Main St',
  city: 'London',
  postal_code: 'N1 1AA',
  country: 'GB',
}
