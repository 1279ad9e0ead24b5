// Print a line a second on the serial port.
#include <Arduino.h>

void setup() { Serial.begin(115200); }

void loop() {
  Serial.println("hello from esp32");
  delay(1000);
}
