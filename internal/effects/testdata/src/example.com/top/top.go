package top

import "example.com/app"

// Run reaches the reporter through two packages.
func Run() { // want Run:`goroutine-forever: top.Run → app.Start → metrics.StartReporter, which starts a goroutine running metrics.loop that never ends`
	app.Start()
}
