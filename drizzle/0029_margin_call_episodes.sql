CREATE TABLE `margin_call_episodes` (
	`login` integer PRIMARY KEY NOT NULL,
	`started_at` integer NOT NULL
);
