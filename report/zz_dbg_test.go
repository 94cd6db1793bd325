package report
import ("testing";"time";"os";"latencytest/report/synth")
func TestDemo(t *testing.T){ dir:=os.Getenv("DEMO"); if dir==""{t.Skip()}; os.MkdirAll(dir,0o755); c:=synth.Default(); c.PhaseLength=60*time.Second; c.Phases=synth.Classic(); if _,err:=synth.Write(dir,c);err!=nil{t.Fatal(err)}; st:=time.Now(); if err:=Render(dir);err!=nil{t.Fatal(err)}; t.Log(time.Since(st)) }
