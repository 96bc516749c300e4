ALTER TABLE `attribution_touches` ADD `unique_click` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `attribution_touches` ADD `suspect` integer DEFAULT 0 NOT NULL;