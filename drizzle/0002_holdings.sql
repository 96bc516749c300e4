CREATE TABLE `holdings` (
	`login` integer NOT NULL,
	`symbol` text NOT NULL,
	`cmd` integer NOT NULL,
	`volume` integer NOT NULL,
	`volume_price` real NOT NULL,
	`commission` integer NOT NULL,
	`storage` integer NOT NULL,
	PRIMARY KEY(`login`, `symbol`, `cmd`)
);
--> statement-breakpoint
DROP INDEX `orders_state_symbol`;--> statement-breakpoint
DROP INDEX `orders_history`;--> statement-breakpoint
DROP INDEX `orders_updated`;--> statement-breakpoint
ALTER TABLE `orders` ADD `origin` text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE INDEX `orders_history` ON `orders` (`login`,`close_time`,`ticket`) WHERE state in ('closed', 'cancelled', 'expired');--> statement-breakpoint
CREATE INDEX `orders_updated` ON `orders` (`updated_at`,`origin`);--> statement-breakpoint
INSERT INTO `holdings` (`login`, `symbol`, `cmd`, `volume`, `volume_price`, `commission`, `storage`)
SELECT `login`, `symbol`, `cmd` % 2, sum(`volume`), sum(`volume` * `open_price`), sum(`commission`), sum(`storage`)
FROM `orders` WHERE `state` = 'open' GROUP BY `login`, `symbol`, `cmd` % 2;
--> statement-breakpoint
-- holdings follow every change of an open position, whatever code path writes it
CREATE TRIGGER `holdings_on_insert` AFTER INSERT ON `orders` WHEN NEW.`state` = 'open' BEGIN
  INSERT INTO `holdings` (`login`, `symbol`, `cmd`, `volume`, `volume_price`, `commission`, `storage`)
  VALUES (NEW.`login`, NEW.`symbol`, NEW.`cmd` % 2, NEW.`volume`, NEW.`volume` * NEW.`open_price`, NEW.`commission`, NEW.`storage`)
  ON CONFLICT (`login`, `symbol`, `cmd`) DO UPDATE SET
    `volume` = `volume` + excluded.`volume`,
    `volume_price` = `volume_price` + excluded.`volume_price`,
    `commission` = `commission` + excluded.`commission`,
    `storage` = `storage` + excluded.`storage`;
END;
--> statement-breakpoint
CREATE TRIGGER `holdings_on_update` AFTER UPDATE ON `orders` WHEN OLD.`state` = 'open' OR NEW.`state` = 'open' BEGIN
  UPDATE `holdings` SET
    `volume` = `volume` - OLD.`volume`,
    `volume_price` = CASE WHEN `volume` - OLD.`volume` <= 0 THEN 0 ELSE `volume_price` - OLD.`volume` * OLD.`open_price` END,
    `commission` = CASE WHEN `volume` - OLD.`volume` <= 0 THEN 0 ELSE `commission` - OLD.`commission` END,
    `storage` = CASE WHEN `volume` - OLD.`volume` <= 0 THEN 0 ELSE `storage` - OLD.`storage` END
  WHERE OLD.`state` = 'open' AND `login` = OLD.`login` AND `symbol` = OLD.`symbol` AND `cmd` = OLD.`cmd` % 2;
  INSERT INTO `holdings` (`login`, `symbol`, `cmd`, `volume`, `volume_price`, `commission`, `storage`)
  SELECT NEW.`login`, NEW.`symbol`, NEW.`cmd` % 2, NEW.`volume`, NEW.`volume` * NEW.`open_price`, NEW.`commission`, NEW.`storage`
  WHERE NEW.`state` = 'open'
  ON CONFLICT (`login`, `symbol`, `cmd`) DO UPDATE SET
    `volume` = `volume` + excluded.`volume`,
    `volume_price` = `volume_price` + excluded.`volume_price`,
    `commission` = `commission` + excluded.`commission`,
    `storage` = `storage` + excluded.`storage`;
END;
